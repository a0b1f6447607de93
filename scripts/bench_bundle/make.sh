#!/bin/bash
# Builds the benchmark bundle: collie's benchmark binaries (collie, collie_bench_worker,
# collie_bench_mpi, debug info stripped) plus Debian 12's OpenMPI 4.1.4 runtime,
# relocated, and run.sh / env.sh / README.md from this folder, so that
# `bash BUNDLE/run.sh OUTDIR` compares collie with OpenMPI on a machine without MPI.
#   bash scripts/bench_bundle/make.sh [--portable-libevent | --libevent-dir DIR] [BUNDLE [BUILD]]
# BUNDLE: default .devbundle at the repository root (git-ignored); BUILD: default
# build-main, a build with collie_bench_mpi (cmake --build BUILD --target collie_cli).
# --portable-libevent rebuilds libevent_core / libevent_pthreads from Debian's source
# without glibc's arc4random, so the bundle needs glibc >= 2.34 instead of >= 2.36
# (needs network access to deb.debian.org, or DEBIAN_MIRROR / DEBIAN_SECURITY_MIRROR).
# --libevent-dir DIR takes those two libraries from DIR (e.g. an earlier bundle's ompi/lib).
# Installs openmpi-bin, libopenmpi-dev (and for --portable-libevent the build tools)
# with apt-get when missing. See README.md.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
portable=0 levdir=
while (($#)); do
  case "$1" in
    --portable-libevent) portable=1; shift ;;
    --libevent-dir) levdir=${2:?--libevent-dir needs a folder}; shift 2 ;;
    -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "make.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
B=${1:-$root/.devbundle}
BUILD=${2:-$root/build-main}
SYS=/usr/lib/x86_64-linux-gnu
PLUG=$SYS/openmpi/lib/openmpi3
PMIXLIB=$SYS/pmix2
say() { echo "make.sh: $*"; }
die() { echo "make.sh: $*" >&2; exit 1; }

for b in collie collie_bench_worker collie_bench_mpi; do
  [ -x "$BUILD/bin/$b" ] || die "$BUILD/bin/$b is missing: build it first, e.g.
  cmake -S $root -B $BUILD -G Ninja && cmake --build $BUILD -j2 --target collie_cli
(collie_bench_mpi is only built when OpenMPI's libopenmpi-dev is installed)"
done
mkdir -p "$B"
B=$(cd "$B" && pwd)

# ---- 0. Packages ---------------------------------------------------------------
need=(openmpi-bin libopenmpi-dev binutils)
((portable)) && need+=(dpkg-dev build-essential autoconf automake libtool pkg-config)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  [ "$(id -u)" = 0 ] || die "missing packages (${missing[*]}); install them as root"
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[[ -d "$PLUG" && -d "$PMIXLIB/lib/pmix" ]] ||
  die "expected Debian 12's OpenMPI 4.1.4 layout ($PLUG, $PMIXLIB/lib/pmix)"
work=$(mktemp -d)
chmod 755 "$work"   # apt-get source downloads as user _apt
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lev"

# ---- 1. libevent: Debian's (glibc >= 2.36), given, or rebuilt without arc4random -----
if [ -n "$levdir" ]; then
  for l in libevent_core-2.1.so.7 libevent_pthreads-2.1.so.7; do
    cp -L "$levdir/$l" "$work/lev/$l" || die "--libevent-dir: no $levdir/$l"
  done
  libevent_note="from $levdir"
elif ((portable)); then
  # shellcheck source=portable_libevent.sh
  source "$here/portable_libevent.sh"
  build_portable_libevent "$work/src" "$work/lev"
  libevent_note="rebuilt without glibc's arc4random ($libevent_version)"
else
  libevent_note="Debian's $(dpkg-query -W -f='${Version}' libevent-core-2.1-7) (needs glibc >= 2.36)"
fi

# ---- 2. Collie binaries and the OpenMPI launcher -----------------------------------
rm -rf "${B:?}/bin" "$B/ompi" "$B/pmix" "$B/cxx"
mkdir -p "$B/bin" "$B/ompi/bin" "$B/ompi/lib/openmpi3" "$B/ompi/share" "$B/ompi/etc" \
  "$B/pmix/lib/pmix" "$B/pmix/share" "$B/pmix/etc" "$B/cxx"
# Side by side, as bench.cc expects (it finds its workers next to /proc/self/exe);
# debug info stripped, symbols kept for backtraces.
for b in collie collie_bench_worker collie_bench_mpi; do
  strip --strip-debug -o "$B/bin/$b" "$BUILD/bin/$b"
done
# Plain copies, no symlinks; mpirun == mpiexec == orterun.
for b in orterun mpirun mpiexec; do cp /usr/bin/orterun "$B/ompi/bin/$b"; done
cp /usr/bin/orted /usr/bin/ompi_info "$B/ompi/bin/"

# ---- 3. MCA plugins, minus the network ones that drag in ucx/libfabric/psm/verbs ----
for f in "$PLUG"/*.so; do
  case "${f##*/}" in *ucx*|*ofi*|*psm*|*openib*) continue ;; esac
  cp "$f" "$B/ompi/lib/openmpi3/"
done
cp "$PMIXLIB"/lib/pmix/*.so "$B/pmix/lib/pmix/"

# ---- 4. Data and help files ---------------------------------------------------------
cp -r /usr/share/openmpi "$B/ompi/share/openmpi"
rm -f "$B/ompi/share/openmpi/"*wrapper-data.txt
cp /etc/openmpi/openmpi-mca-params.conf /etc/openmpi/openmpi-default-hostfile "$B/ompi/etc/"
cp -r "$PMIXLIB/share/pmix" "$B/pmix/share/pmix"
# pmix-mca-params.conf is not copied: it hard-codes $PMIXLIB/lib/pmix; env.sh sets
# PMIX_MCA_mca_base_component_path instead.

# ---- 5. Every shared library the ELF files above need, recursively, but glibc's ------
is_glibc() {
  case "$1" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|libutil.so.*|\
    libanl.so.*|ld-linux*|linux-vdso*|libmvec.so.*) return 0 ;;
  esac
  return 1
}
declare -A seen=()
queue=("$B"/bin/* "$B"/ompi/bin/* "$B"/ompi/lib/openmpi3/*.so "$B"/pmix/lib/pmix/*.so)
while ((${#queue[@]})); do
  f=${queue[0]}; queue=("${queue[@]:1}")
  while read -r name path; do
    [[ -z "$path" ]] && continue
    [[ "$path" == NOTFOUND ]] && die "$f needs $name, not found"
    is_glibc "$name" && continue
    [[ -n "${seen[$name]:-}" ]] && continue
    seen[$name]=1
    case "$name" in
      libstdc++.so.*|libgcc_s.so.*) dest="$B/cxx/$name" ;;
      libevent_core-2.1.so.7|libevent_pthreads-2.1.so.7)
        dest="$B/ompi/lib/$name"; [ -f "$work/lev/$name" ] && path="$work/lev/$name" ;;
      *) dest="$B/ompi/lib/$name" ;;
    esac
    cp -L "$path" "$dest"
    queue+=("$dest")
  done < <(ldd "$f" | awk '/=>/ && $3 ~ /^\// {print $1, $3} / not found/ {print $1, "NOTFOUND"}')
done
strip --strip-debug "$B"/ompi/lib/*.so* "$B"/ompi/lib/openmpi3/*.so "$B"/pmix/lib/pmix/*.so 2> /dev/null || true

# ---- 6. The scripts, and what the bundle needs of the target ----------------------------
cp "$here/run.sh" "$here/env.sh" "$here/README.md" "$B/"
maxver() { # highest $1_x.y version the ELF files $2... need
  local tag=$1; shift
  objdump -T "$@" 2> /dev/null | grep -o "${tag}_[0-9.]*" | sort -uV | tail -1
}
mapfile -t elf < <(find "$B/bin" "$B/ompi" "$B/pmix" -type f \( -name '*.so*' -o -perm -u+x \) \
  -exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print)
glibc=$(maxver GLIBC "${elf[@]}")
{
  echo "collie bench bundle, made $(date -u +%Y-%m-%dT%H:%MZ) by scripts/bench_bundle/make.sh"
  echo "checkout: $(git -C "$root" describe --always --dirty 2> /dev/null || echo '?') from $BUILD"
  echo "OpenMPI: $(dpkg-query -W -f='${Version}' openmpi-bin), $(grep -E '^PRETTY_NAME' /etc/os-release | cut -d= -f2)"
  echo "libevent: $libevent_note"
  echo "needs: ${glibc:-?} outside cxx/; cxx/ (GCC's libstdc++) $(maxver GLIBC "$B"/cxx/*),"
  echo "  else the system's libstdc++ with $(maxver GLIBCXX "$B"/bin/*)"
} > "$B/BUILD_INFO.txt"
cat "$B/BUILD_INFO.txt"
du -sh "$B"
