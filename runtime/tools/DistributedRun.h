// The parts of disagmoe-run that train (--train) or run one process per rank (--comm mpi); the
// forward pass on the local comm stays in disagmoe-run.cpp. disagmoe-run's main hands its
// arguments here when handlesArgs says so.
//
//   disagmoe-run PLAN --train [--targets t.npy] [--optimizer sgd|adamw] [--lr X] [--weight-decay X]
//                [--beta1 X] [--beta2 X] [--eps X] [--micro-batches M] [--steps N]
//                [--save-grads DIR] [--save-weights DIR] [--input ids.npy | --batch B --seq-len S
//                --seed N] [--comm local|mpi] [--timeout SECONDS]
//   mpirun -np WORLD disagmoe-run PLAN --comm mpi [--input ids.npy] [--output logits.npy] ...
//   mpirun -np WORLD disagmoe-run PLAN --comm mpi --train ...
//
// With --comm mpi each process runs its own rank (MPI's; checked against OMPI_COMM_WORLD_RANK,
// SLURM_PROCID or RANK), binds only that rank's weights, and rank 0 prints the report and writes
// the outputs (--save-grads/--save-weights: each weight by the process of its lowest holder).
// `--fail-rank R` (a test hook) makes rank R fail at its start, to show that the job then ends
// naming it instead of hanging.
#pragma once

namespace disagmoe::tools {

/// True if the arguments ask for --train or --comm mpi.
bool handlesArgs(int argc, char **argv);

/// The usage text of --train and --comm mpi, printed after disagmoe-run's own by --help.
const char *distributedUsage();

/// Runs disagmoe-run with these arguments; returns the exit code (errors: one line
/// "disagmoe-run: <message>" on stderr, exit code 1).
int distributedMain(int argc, char **argv);

} // namespace disagmoe::tools
