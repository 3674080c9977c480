//===- comm.h - Communicators ------------------------------------*- C++
//-*-===//
//
// A communicator is either MPI (MPI_COMM_WORLD duplicated) or local (one
// rank, no MPI). Collectives used by programs average f32 in place; the
// runtime's own bookkeeping (loss, eval counts, agreement on errors) uses
// the uncounted helpers below so that the per-step byte counts only reflect
// the program's gradient traffic.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_RUNTIME_COMM_H
#define OTC_RUNTIME_COMM_H

#include "otc/runtime.h"

#include <cstdint>
#include <string>

namespace otc {

/// Averages `count` floats in place over all ranks and counts the bytes.
void allReduceMeanF32(otc_comm_t *comm, float *data, int64_t count);
/// Sums doubles over all ranks (not counted in the step's bytes).
void allReduceSumF64(otc_comm_t *comm, double *data, int64_t count);
/// True on every rank iff `ok` is true on every rank.
bool allAgree(otc_comm_t *comm, bool ok);
void barrier(otc_comm_t *comm);
/// Ends every rank of an MPI job (a rank failed where the others may be
/// blocked in a collective); returns only for a 1-rank or local comm.
void abortAll(otc_comm_t *comm, int exitCode);

/// The callback handed to programs (otc_step_context_t::all_reduce_mean_f32).
int allReduceMeanCallback(void *comm, float *data, int64_t count);

/// Last error a collective run from a program reported (empty if none).
std::string takeCommError(otc_comm_t *comm);

} // namespace otc

#endif // OTC_RUNTIME_COMM_H
