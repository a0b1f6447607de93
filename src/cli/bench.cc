// `collie bench`: nccl-tests-style sweeps of collie's collectives, optionally side
// by side with OpenMPI's own collectives in the same run.
//
// The driver launches the worker (bin/collie_bench_worker) through `collie run`,
// and with --compare mpi the MPI worker (bin/collie_bench_mpi) through mpirun,
// one op at a time, alternating, so both see the same machine state. Workers print
// RESULT lines (src/bench/bench_sweep.h); the driver turns them into the table,
// JSON/CSV files and a gnuplot plot.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/shm/copy_path.h"
#include "bench/bench_config.h"
#include "cli/bench_rows.h"
#include "cli/commands.h"
#include "cli/cpu_binding.h"
#include "cli/machine_probe.h"
#include "core/reduce_kernels.h"

namespace collie::cli {
namespace {

using bench::BenchConfig;

struct Options {
  BenchConfig config;
  int ranks = 2;
  int rounds = 1;  // sweeps per side and op: the best of each side, and each round's speed-up
  bool compare_mpi = false;
  std::string json, csv, plot;
};

using Row = BenchRow;

Options parse(const std::vector<std::string>& args) {
  Options o;
  std::vector<std::string> rest;
  o.config = bench::parse_config(args, &rest);
  for (size_t i = 0; i < rest.size(); ++i) {
    auto value = [&]() -> const std::string& {
      if (i + 1 >= rest.size()) throw std::invalid_argument(rest[i] + " needs a value");
      return rest[++i];
    };
    const std::string& a = rest[i];
    if (a == "-n" || a == "-np")
      o.ranks = std::stoi(value());
    else if (a == "--rounds")
      o.rounds = std::stoi(value());
    else if (a == "--compare") {
      if (value() != "mpi") throw std::invalid_argument("--compare supports only 'mpi'");
      o.compare_mpi = true;
    } else if (a == "--json")
      o.json = value();
    else if (a == "--csv")
      o.csv = value();
    else if (a == "--plot")
      o.plot = value();
    else
      throw std::invalid_argument("unknown option '" + a + "'");
  }
  if (o.ranks < 1) throw std::invalid_argument("-n must be at least 1");
  if (o.rounds < 1) throw std::invalid_argument("--rounds must be at least 1");
  bench::check_root(o.config, o.ranks);
  return o;
}

std::string self_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

// A shell word: inside '...' a quote ends the word, is escaped and starts it again.
std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A gnuplot string literal: inside '...' gnuplot writes a quote as two ('').
std::string gnuplot_string(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

// Runs `command`, returns the RESULT rows it printed; worker output other than
// RESULT lines goes to stderr so failures stay visible. With `span` (--span) a
// row's time is its slowest rank's: timed from the last rank's start, a call is
// done when its last rank is, and a rank done before the last one started (a
// broadcast's root) counts 0, which a median over ranks would report.
std::vector<Row> run_worker(const std::string& command, bool span, bool* failed) {
  std::vector<Row> rows;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) throw std::runtime_error("cannot run: " + command);
  char line[1024];
  while (std::fgets(line, sizeof(line), p) != nullptr) {
    std::istringstream in(line);
    std::string tag;
    Row r;
    if (in >> tag && tag == "RESULT" &&
        in >> r.op >> r.bytes >> r.median_us >> r.min_us >> r.max_us >> r.check) {
      if (span) r.median_us = r.max_us;
      rows.push_back(r);
    } else {
      std::fputs(line, stderr);
    }
  }
  int status = pclose(p);
  if (status != 0) *failed = true;
  return rows;
}

// How the times were taken, for the header line.
const char* timing_method(const BenchConfig& c) {
  if (c.loop) return "time: mean of back-to-back calls";
  return c.span ? "time: slowest rank's median of calls after a barrier, from the last rank's start"
                : "time: median of calls after a barrier";
}

// ", root 2", ", roots rotating": whom the rooted ops use, for a sweep that
// has one; "" otherwise.
std::string root_text(const BenchConfig& c) {
  const bool rooted = std::any_of(c.ops.begin(), c.ops.end(), bench::is_rooted);
  if (!rooted) return "";
  return c.root == bench::kRotateRoot ? ", roots rotating" : ", root " + std::to_string(c.root);
}

std::string human(size_t bytes) {
  const char* units[] = {"B", "K", "M", "G"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 3 && static_cast<size_t>(v) % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g%s", v, units[u]);
  return buf;
}

// `text` with the characters a JSON string cannot hold as they are escaped
// (the CPU's model name is whatever the kernel reports).
std::string json_string_body(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) >= 0x20) {
      out += c;
    }
  }
  return out;
}

// "0.78-0.92": the lowest and highest of a size's per-round speed-ups; "n/a"
// without any.
std::string speedup_range(const std::vector<double>& speedups) {
  if (speedups.empty()) return "n/a";
  const auto [lo, hi] = std::minmax_element(speedups.begin(), speedups.end());
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f-%.2f", *lo, *hi);
  return buf;
}

// A JSON array of numbers.
std::string json_array(const std::vector<double>& values) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << "]";
  return out.str();
}

void write_outputs(const Options& o, const std::vector<Row>& collie_rows,
                   const std::map<std::pair<std::string, size_t>, Row>& mpi, const RoundLog& rounds,
                   double memcpy_bw, double handoff_bw, const std::string& cpu,
                   const std::string& huge_pages) {
  auto busbw = [&](const Row& r) {
    return r.median_us > 0 ? r.bytes / (r.median_us * 1e3) * bench::busbw_factor(r.op, o.ranks)
                           : 0.0;
  };
  // How each call was timed; with --span the time columns hold the slowest
  // rank's time from the latest start, so the files say which measure they hold.
  const char* timing = o.config.loop ? "loop" : o.config.span ? "span" : "per_call";
  if (!o.csv.empty()) {
    std::ofstream f(o.csv);
    f << "op,bytes,ranks,dtype,timing,collie_us,collie_min_us,collie_max_us,collie_busbw_gbps,"
         "check,mpi_us,mpi_busbw_gbps,speedup,speedup_round_min,speedup_round_max\n";
    for (const Row& r : collie_rows) {
      auto it = mpi.find({r.op, r.bytes});
      f << r.op << "," << r.bytes << "," << o.ranks << "," << o.config.dtype << "," << timing << ","
        << r.median_us << "," << r.min_us << "," << r.max_us << "," << busbw(r) << "," << r.check;
      if (it != mpi.end() && it->second.median_us > 0) {
        f << "," << it->second.median_us << "," << busbw(it->second) << ","
          << it->second.median_us / r.median_us;
      } else {
        f << ",,,";
      }
      const std::vector<double> paired = paired_speedups(rounds.of(r.op, r.bytes));
      if (!paired.empty()) {
        const auto [lo, hi] = std::minmax_element(paired.begin(), paired.end());
        f << "," << *lo << "," << *hi;
      } else {
        f << ",,";
      }
      f << "\n";
    }
  }
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    f << "{\"ranks\": " << o.ranks << ", \"dtype\": \"" << o.config.dtype << "\", \"cpu\": \""
      << json_string_body(cpu) << "\", \"huge_pages\": \"" << json_string_body(huge_pages)
      << "\", \"memcpy_gbps\": " << memcpy_bw << ", \"handoff_gbps\": " << handoff_bw
      << ", \"timing\": \"" << timing << "\", \"root\": "
      << (o.config.root == bench::kRotateRoot ? "\"rotate\"" : std::to_string(o.config.root))
      << ", \"rounds\": " << o.rounds << ", \"results\": [\n";
    for (size_t i = 0; i < collie_rows.size(); ++i) {
      const Row& r = collie_rows[i];
      auto it = mpi.find({r.op, r.bytes});
      f << "  {\"op\": \"" << r.op << "\", \"bytes\": " << r.bytes
        << ", \"collie_us\": " << r.median_us << ", \"collie_min_us\": " << r.min_us
        << ", \"collie_max_us\": " << r.max_us << ", \"collie_busbw_gbps\": " << busbw(r)
        << ", \"check\": \"" << r.check << "\"";
      if (it != mpi.end() && it->second.median_us > 0) {
        f << ", \"mpi_us\": " << it->second.median_us
          << ", \"mpi_busbw_gbps\": " << busbw(it->second)
          << ", \"speedup\": " << it->second.median_us / r.median_us;
      }
      if (o.compare_mpi) {  // every round of each side, and the speed-ups they pair into
        const RoundMedians& m = rounds.of(r.op, r.bytes);
        f << ", \"collie_us_rounds\": " << json_array(m.collie_us)
          << ", \"mpi_us_rounds\": " << json_array(m.mpi_us)
          << ", \"speedup_rounds\": " << json_array(paired_speedups(m));
      }
      f << "}" << (i + 1 < collie_rows.size() ? "," : "") << "\n";
    }
    f << "]}\n";
  }
  if (!o.plot.empty()) {
    std::string data = o.plot + ".dat";
    std::ofstream d(data);
    std::vector<std::string> ops;
    for (const Row& r : collie_rows) {
      if (std::find(ops.begin(), ops.end(), r.op) == ops.end()) ops.push_back(r.op);
    }
    for (const std::string& op : ops) {  // one gnuplot data block per op
      d << "# " << op << "\n";
      for (const Row& r : collie_rows) {
        if (r.op != op) continue;
        auto it = mpi.find({r.op, r.bytes});
        d << r.bytes << " " << busbw(r) << " " << (it != mpi.end() ? busbw(it->second) : 0) << "\n";
      }
      d << "\n\n";
    }
    d.close();
    // The x axis has a tic at each swept size, labelled as in the table ("8K"),
    // every other one when there are many (gnuplot's own binary prefixes came
    // out as "16  B" and "1kiB").
    std::vector<size_t> sizes;
    for (const Row& r : collie_rows) {
      if (std::find(sizes.begin(), sizes.end(), r.bytes) == sizes.end()) sizes.push_back(r.bytes);
    }
    std::sort(sizes.begin(), sizes.end());
    const size_t tic_every = sizes.size() > 14 ? 2 : 1;
    std::string tics;
    for (size_t i = 0; i < sizes.size(); i += tic_every) {
      tics += (tics.empty() ? "" : ", ") + gnuplot_string(human(sizes[i])) + " " +
              std::to_string(sizes[i]);
    }
    char memcpy_text[32];
    std::snprintf(memcpy_text, sizeof(memcpy_text), "%.2f", memcpy_bw);
    std::string script = o.plot + ".gp";
    std::ofstream g(script);
    g << "set terminal pngcairo size 1000,650\nset output " << gnuplot_string(o.plot) << "\n"
      << "set termoption noenhanced\nset logscale x 2\nset xtics (" << tics << ")\n"
      << "set xlabel 'bytes'\nset ylabel 'busbw (GB/s)'\nset key left top\n"
      << "set title 'collie vs OpenMPI, " << o.ranks << " ranks, " << o.config.dtype << " (memcpy "
      << memcpy_text << " GB/s)'\nplot ";
    for (size_t i = 0; i < ops.size(); ++i) {
      g << (i ? ", " : "") << gnuplot_string(data) << " index " << i
        << " using 1:2 with linespoints title 'collie " << ops[i] << "'";
      if (o.compare_mpi) {
        g << ", " << gnuplot_string(data) << " index " << i
          << " using 1:3 with linespoints dashtype 2 title 'OpenMPI " << ops[i] << "'";
      }
    }
    g << "\n";
    g.close();
    if (std::system(("gnuplot " + shell_quote(script)).c_str()) != 0) {
      std::fprintf(stderr,
                   "collie bench: gnuplot failed or is not installed (apt-get install "
                   "gnuplot-nox); data in %s\n",
                   data.c_str());
    }
  }
}

}  // namespace

std::string bench_usage() {
  return "usage: collie bench [-n N] [--op OP[,OP...]|all] [-b MIN] [-e MAX] [-f FACTOR]\n"
         "                    [--dtype T] [-w WARMUP] [--iters N] [--cold] [--dirty] [--shared]\n"
         "                    [--loop] [--span] [--root R|rotate] [--no-check] [-h|--help]\n"
         "                    [--compare mpi] [--rounds N]\n"
         "                    [--json FILE] [--csv FILE] [--plot FILE.png]\n"
         "\n"
         "Sweeps message sizes from MIN to MAX (bytes; K/M/G suffixes) by FACTOR and prints,\n"
         "per size, the median time over ranks (and min/max), algbw and busbw (nccl-tests\n"
         "factors) and whether every result was correct. OPs: all_reduce, all_gather,\n"
         "reduce_scatter, broadcast, reduce, all_to_all, send_recv, gather, scatter, or\n"
         "all; --op may be repeated or list several (--op gather,scatter). all_gather,\n"
         "reduce_scatter, all_to_all, gather and scatter are sized by the whole gathered\n"
         "or scattered buffer, the others by one rank's.\n"
         "--compare mpi runs the same sweep through OpenMPI's own collectives (mpirun),\n"
         "alternating per op, and prints the speed-up (MPI time / collie time).\n"
         "--rounds N runs each op's sweep N times on each side (alternating with OpenMPI's)\n"
         "and reports, per size and side, the round with the lowest median: on a shared\n"
         "machine whose speed changes from minute to minute, both sides then get a chance\n"
         "at its quiet moments. With --compare mpi it also prints the range of the rounds'\n"
         "own speed-ups (rounds_x: each round's OpenMPI time over the same round's collie\n"
         "time, both taken seconds apart), which shows how far a ratio moves with the machine.\n"
         "--cold rotates inputs through more memory than the caches hold.\n"
         "--dirty has each rank write its input again before every call (untimed), as a\n"
         "training step just produced it: then it is in its writer's cache, not clean\n"
         "data any core reads at full speed (not with --loop).\n"
         "--shared allocates collie's inputs with empty_shared() (the single-copy path;\n"
         "OpenMPI's side is unchanged).\n"
         "--loop times the calls back to back after one barrier and reports each rank's\n"
         "mean (nccl-tests' method); by default each call is timed after its own barrier\n"
         "and each rank's median is reported. With --loop the first size warms up for\n"
         "at least 20 ms as well (a process's first milliseconds stall now and then).\n"
         "--span times each call after its own barrier from the moment the last rank\n"
         "started it (not each rank's own start), so that how far apart the barrier let\n"
         "the ranks go is not counted: the collective's own critical path; the time shown\n"
         "is the slowest rank's (not with --loop).\n"
         "--root R roots broadcast, reduce, gather and scatter at rank R (default 0);\n"
         "--root rotate gives call i the root i % N, so that no rank's place in the\n"
         "barrier favours a side.\n"
         "Defaults: -n 2 --op all_reduce -b 8 -e 64M -f 2 --dtype float32 -w 3.\n";
}

int bench_main(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(bench_usage().c_str(), stdout);
      return 0;
    }
  }
  Options o;
  try {
    o = parse(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collie bench: %s\n%s", e.what(), bench_usage().c_str());
    return 2;
  }
  const std::string dir = self_dir();
  const std::string cpu = cpu_summary();
  const std::string huge_pages = huge_page_mode();
  std::string copy_path;
  try {
    copy_path = detail::describe_copy_path_preference();
  } catch (const std::exception& e) {
    copy_path = "invalid";  // the ranks fail with the reason
  }
  std::string reductions;
  try {
    reductions = detail::describe_reduce_kernels();
  } catch (const std::exception& e) {
    reductions = "invalid";  // the ranks fail with the reason
  }
  const double memcpy_bw = memcpy_gbps();
  const double handoff_bw = handoff_gbps(allowed_cpus());
  char handoff[48] = "n/a";
  if (handoff_bw > 0) std::snprintf(handoff, sizeof handoff, "%.2f GB/s", handoff_bw);
  std::printf(
      "# collie bench: %d ranks, %s, memcpy %.2f GB/s (one core, 64 MiB), core-to-core %s "
      "(256 KiB hand-offs), %s%s%s\n# cpu: %s; transparent huge pages: %s; copy path: %s; "
      "reductions: %s\n",
      o.ranks, o.config.dtype.c_str(), memcpy_bw, handoff, timing_method(o.config),
      root_text(o.config).c_str(),
      o.rounds > 1 ? (", best of " + std::to_string(o.rounds) + " rounds").c_str() : "",
      cpu.c_str(), huge_pages.c_str(), copy_path.c_str(), reductions.c_str());
  std::printf("# %-14s %8s %11s %11s %11s %9s %9s %6s", "op", "size", "time_us", "min_us", "max_us",
              "algbw", "busbw", "check");
  const bool show_rounds = o.compare_mpi && o.rounds > 1;
  if (o.compare_mpi) std::printf(" %11s %9s %8s", "mpi_us", "mpi_busbw", "speedup");
  if (show_rounds) std::printf(" %11s", "rounds_x");
  std::printf("\n");
  bool failed = false;
  std::vector<Row> collie_rows;
  std::map<std::pair<std::string, size_t>, Row> mpi;
  RoundLog rounds;
  for (const std::string& op : o.config.ops) {
    BenchConfig one = o.config;
    one.ops = {op};
    std::string worker_args;
    for (const std::string& a : bench::config_args(one)) worker_args += " " + shell_quote(a);
    bool worker_failed = false;
    std::vector<Row> rows, mpi_rows;
    for (int round = 0; round < o.rounds; ++round) {
      const std::vector<Row> round_rows =
          run_worker(shell_quote(dir + "/collie") + " run -n " + std::to_string(o.ranks) + " -- " +
                         shell_quote(dir + "/collie_bench_worker") + worker_args,
                     o.config.span, &worker_failed);
      for (const Row& r : round_rows) keep_best(rows, r);
      if (o.compare_mpi) {
        std::string mpirun = "mpirun --oversubscribe " +
                             std::string(geteuid() == 0 ? "--allow-run-as-root " : "") + "-np " +
                             std::to_string(o.ranks) + " " +
                             shell_quote(dir + "/collie_bench_mpi") + worker_args;
        bool mpi_failed = false;
        const std::vector<Row> round_mpi = run_worker(mpirun, o.config.span, &mpi_failed);
        for (const Row& r : round_mpi) keep_best(mpi_rows, r);
        rounds.add(op, round_rows, round_mpi);
        if (mpi_failed)
          std::fprintf(stderr, "collie bench: the MPI run of %s failed\n", op.c_str());
      }
    }
    for (const Row& r : mpi_rows) {
      mpi[{r.op, r.bytes}] = r;
      // A wrong OpenMPI result makes the comparison meaningless: the run fails.
      if (r.check == "FAIL") {
        std::fprintf(stderr, "collie bench: OpenMPI's %s of %zu bytes gave a wrong result\n",
                     r.op.c_str(), r.bytes);
        failed = true;
      }
    }
    failed |= worker_failed;
    for (const Row& r : rows) {
      double algbw = r.median_us > 0 ? r.bytes / (r.median_us * 1e3) : 0;
      std::printf("  %-14s %8s %11.2f %11.2f %11.2f %9.3f %9.3f %6s", r.op.c_str(),
                  human(r.bytes).c_str(), r.median_us, r.min_us, r.max_us, algbw,
                  algbw * bench::busbw_factor(r.op, o.ranks), r.check.c_str());
      if (o.compare_mpi) {
        auto it = mpi.find({r.op, r.bytes});
        if (it != mpi.end() && it->second.median_us > 0) {
          double mbw = r.bytes / (it->second.median_us * 1e3) * bench::busbw_factor(r.op, o.ranks);
          std::printf(" %11.2f %9.3f %7.2fx", it->second.median_us, mbw,
                      it->second.median_us / r.median_us);
        } else {
          std::printf(" %11s %9s %8s", "n/a", "n/a", "n/a");
        }
      }
      if (show_rounds) {
        std::printf(" %11s", speedup_range(paired_speedups(rounds.of(r.op, r.bytes))).c_str());
      }
      std::printf("\n");
      std::fflush(stdout);
      if (r.check == "FAIL") failed = true;
      collie_rows.push_back(r);
    }
  }
  write_outputs(o, collie_rows, mpi, rounds, memcpy_bw, handoff_bw, cpu, huge_pages);
  if (failed) std::fprintf(stderr, "collie bench: a run failed or a result was wrong\n");
  return failed ? 1 : 0;
}

}  // namespace collie::cli
