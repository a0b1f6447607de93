# shellcheck shell=bash
# The bundle's environment, sourced by run.sh (or by hand: `source BUNDLE/env.sh`, then
# `collie bench -n 4 ... --compare mpi`): puts the bundle's collie binaries and relocated
# OpenMPI first on PATH and LD_LIBRARY_PATH and drops inherited MPI settings.
# B (default: this file's folder) is the bundle; O and P are its ompi/ and pmix/.
B=${B:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
for v in $(env | sed -n 's/^\(\(OMPI\|OPAL\|PMIX\|PMI\|ORTE\|SLURM\|COLLIE\|HWLOC\)_[A-Za-z0-9_]*\)=.*/\1/p'); do
  unset "$v"
done
unset LD_PRELOAD RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE LOCAL_SIZE
O=$B/ompi
export OPAL_PREFIX=$O OPAL_EXEC_PREFIX=$O OPAL_BINDIR=$O/bin OPAL_SBINDIR=$O/bin \
  OPAL_LIBEXECDIR=$O/bin OPAL_LIBDIR=$O/lib OPAL_PKGLIBDIR=$O/lib/openmpi3 \
  OPAL_DATAROOTDIR=$O/share OPAL_DATADIR=$O/share OPAL_PKGDATADIR=$O/share/openmpi \
  OPAL_SYSCONFDIR=$O/etc OPAL_INCLUDEDIR=$O/include OPAL_PKGINCLUDEDIR=$O/include
export OMPI_MCA_mca_base_component_path=$O/lib/openmpi3
export OMPI_MCA_mca_base_param_files=$O/etc/openmpi-mca-params.conf
export OMPI_MCA_orte_default_hostfile=$O/etc/openmpi-default-hostfile
P=$B/pmix
export PMIX_PREFIX=$P PMIX_EXEC_PREFIX=$P PMIX_LIBDIR=$P/lib PMIX_PKGLIBDIR=$P/lib/pmix \
  PMIX_DATAROOTDIR=$P/share PMIX_DATADIR=$P/share PMIX_PKGDATADIR=$P/share/pmix \
  PMIX_SYSCONFDIR=$P/etc
export PMIX_MCA_mca_base_component_path=$P/lib/pmix
# hwloc: never load the host's hwloc plugins (other hwloc versions); none are bundled.
export HWLOC_PLUGINS_PATH=$B/no-hwloc-plugins
# Single node, shared memory only; the network plugins are not in the bundle.
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_mtl='^ofi,psm,psm2' \
  OMPI_MCA_osc='^ucx,pt2pt' OMPI_MCA_btl_base_warn_component_unused=0
# One node: launch with plm isolated (plm rsh aborts when no ssh/rsh is installed).
export OMPI_MCA_plm=isolated
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH=$B/bin:$O/bin:$PATH

# libstdc++: the bundled one (GCC 12, needs glibc >= 2.36) if it loads here, else
# the system's (needs GLIBCXX_3.4.30, e.g. Ubuntu 22.04's libstdc++6 12.x).
export LD_LIBRARY_PATH=$O/lib:$B/cxx
BUNDLE_CXX_NOTE=
_probe=$(mktemp)
if ! "$B/bin/collie" bench --help > /dev/null 2> "$_probe"; then
  export LD_LIBRARY_PATH=$O/lib
  BUNDLE_CXX_NOTE="bundled libstdc++ does not load here ($(head -1 "$_probe")); using the system's"
  if ! "$B/bin/collie" bench --help > /dev/null 2>> "$_probe"; then
    BUNDLE_CXX_NOTE="$BUNDLE_CXX_NOTE; collie cannot start with the system libstdc++ either: $(tail -1 "$_probe")"
  fi
fi
rm -f "$_probe"
