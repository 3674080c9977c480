//===- driver.h - The training executable's main ----------------*- C++ -*-===//

#ifndef OTC_RUNTIME_TOOLING_DRIVER_H
#define OTC_RUNTIME_TOOLING_DRIVER_H

#include "otc/runtime.h"

namespace otc {

/// otc_driver_main with an optional communicator (NULL: MPI world), so tests
/// can drive it in-process without MPI.
int driverMain(int argc, char **argv, const otc_program_entry_t *entry,
               otc_comm_t *comm);

} // namespace otc

#endif // OTC_RUNTIME_TOOLING_DRIVER_H
