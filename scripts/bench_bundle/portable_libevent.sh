# shellcheck shell=bash
# Sourced by make.sh --portable-libevent. Debian 12's libevent_core-2.1.so.7 calls
# glibc's arc4random (GLIBC_2.36), the only reason the bundle would need glibc >= 2.36.
# build_portable_libevent SRC OUT rebuilds libevent_core / libevent_pthreads from
# Debian's own source package (the installed version when the archive still has it)
# with libevent's internal arc4random, and puts the two .so.7 files into OUT.
# The source comes through a private apt source list (deb-src entries), so the
# system's apt configuration is left alone. Sets libevent_version.
build_portable_libevent() {
  local src=$1 out=$2 codename mirror secmirror ver dir f
  local -a apt
  # shellcheck source=/dev/null
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
  secmirror=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
  mkdir -p "$src/lists/partial" "$src/cache/archives/partial" "$out"
  chmod 755 "$src"   # apt-get source downloads as user _apt
  {
    echo "deb-src $mirror $codename main"
    echo "deb-src $mirror $codename-updates main"
    echo "deb-src $secmirror $codename-security main"
  } > "$src/sources.list"
  apt=(-o "Dir::Etc::SourceList=$src/sources.list" -o "Dir::Etc::SourceParts=$src/none"
       -o "Dir::State::Lists=$src/lists" -o "Dir::Cache=$src/cache")
  echo "make.sh: fetching libevent's source ($mirror, $codename)"
  apt-get "${apt[@]}" update -qq || { echo "make.sh: apt-get update (deb-src) failed" >&2; return 1; }
  ver=$(dpkg-query -W -f='${Version}' libevent-core-2.1-7)
  if ! (cd "$src" && apt-get "${apt[@]}" source -qq "libevent=$ver"); then
    echo "make.sh: WARNING: libevent $ver is not in the archive; taking its newest version" >&2
    (cd "$src" && apt-get "${apt[@]}" source -qq libevent) || return 1
  fi
  dir=$(find "$src" -mindepth 1 -maxdepth 1 -type d -name 'libevent-*' | head -1)
  [ -n "$dir" ] || { echo "make.sh: apt-get source unpacked nothing" >&2; return 1; }
  libevent_version=$(cd "$dir" && dpkg-parsechangelog -S Version)
  # glibc >= 2.36's stdlib.h declares arc4random*; rename libevent's internal copies.
  sed -i 's|^#include "./arc4random.c"|#define arc4random ev_int_arc4random\
#define arc4random_buf ev_int_arc4random_buf\
#define arc4random_uniform ev_int_arc4random_uniform\
#define arc4random_addrandom ev_int_arc4random_addrandom\
#define arc4random_stir ev_int_arc4random_stir\
&|' "$dir/evutil_rand.c"
  grep -q '^#define arc4random ev_int_arc4random' "$dir/evutil_rand.c" ||
    { echo "make.sh: evutil_rand.c has no #include \"./arc4random.c\" to patch" >&2; return 1; }
  echo "make.sh: building libevent $libevent_version (log: $dir/build.log)"
  (
    cd "$dir" || exit 1
    autoreconf -fi   # Debian's patches touch Makefile.am (dh_autoreconf does this too)
    ./configure --disable-libevent-regress --disable-openssl --disable-samples \
      ac_cv_func_arc4random=no ac_cv_func_arc4random_buf=no ac_cv_func_arc4random_addrandom=no
    make include/event2/event-config.h
    make -j"${JOBS:-2}" libevent_core.la libevent_pthreads.la
  ) > "$dir/build.log" 2>&1 || { tail -20 "$dir/build.log" >&2; return 1; }
  for f in libevent_core-2.1.so.7 libevent_pthreads-2.1.so.7; do
    cp -L "$dir/.libs/$f" "$out/$f"
    if objdump -T "$out/$f" | grep -q 'arc4random.*GLIBC'; then
      echo "make.sh: $f still uses glibc's arc4random" >&2; return 1
    fi
    # Same exported symbols as Debian's build, or the bundle's OpenMPI may not load.
    if ! cmp -s <(nm -D --defined-only "$out/$f" | awk '{print $3}' | sort) \
      <(nm -D --defined-only "/usr/lib/x86_64-linux-gnu/$f" | awk '{print $3}' | sort); then
      echo "make.sh: WARNING: $f exports other symbols than Debian's" >&2
    fi
  done
  echo "make.sh: libevent needs $(objdump -T "$out"/*.so.7 | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
}
