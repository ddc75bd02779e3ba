# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The Open MPI environment of every script that mpiruns railnet's tools on one machine, often
# with the ranks in softverbs pods (bench/*.sh, test/bench, test/integration, test/preflight):
# sourced, it lets Open MPI run as root, keeps the ranks' MPI traffic in shared memory (vader
# works across network namespaces, TCP between them would need routes; no single-copy
# mechanism, which namespaces and ptrace rules break) and allows more ranks than cores.
#   . "$S/bench/railnet-bench/mpi-env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
# Bind each rank to its NUMA node (on a one-node machine: every CPU, so no constraint), even
# when ranks outnumber cores. An unbound rank makes MPI_Init load the whole hwloc topology itself,
# PCI names included; under ASan that one step took 10-20 s per rank on the 2-core CI machine
# (libpciaccess grows a buffer by realloc); a rank bound at launch skips it. Scripts that
# measure many ranks on a GPU machine (rails.sh, nccl_compare.sh) keep --bind-to none.
export OMPI_MCA_hwloc_base_binding_policy=numa:overload-allowed
