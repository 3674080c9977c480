//===- otcpy.h - Shared pieces of the otc extension -------------*- C++ -*-===//
//
// The extension otc._otc wraps the runtime's C API (otc/runtime.h). Every
// failing status becomes an otc.Error carrying the runtime's message and
// its code's name (`code`, e.g. "INVALID_ARGUMENT"); the checks the
// bindings add themselves (input names, shapes, dtypes) raise the same.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_PYTHON_OTCPY_H
#define OTC_PYTHON_OTCPY_H

#include "otc/runtime.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

namespace otcpy {

namespace py = pybind11;

/// Raises otc.Error(message) with `code` set to the code's name. Needs the
/// GIL.
[[noreturn]] void raiseError(otc_status_code_t code, const std::string &msg);
/// Raises for a non-NULL status (and frees it); nothing for OK.
void check(otc_status_t status);

/// A tensor's layout as the program declares it (an input, a parameter,
/// the eval output).
struct TensorSpec {
  std::string name, role;
  otc_dtype_t dtype = OTC_DTYPE_F32;
  std::vector<int64_t> shape;

  static TensorSpec fromInfo(const otc_tensor_info_t &info);
  int64_t numel() const;
  size_t bytes() const { return size_t(numel()) * otc_dtype_size(dtype); }
};

/// "[128, 784]".
std::string shapeString(const std::vector<int64_t> &shape);
/// The NumPy name of an OTC dtype ("float32", ...; bf16, which NumPy lacks,
/// is its bits as "uint16").
const char *numpyDtypeName(otc_dtype_t dtype);
/// A new, uninitialised NumPy array with the spec's dtype and shape.
py::array newArray(const TensorSpec &spec);

} // namespace otcpy

#endif // OTC_PYTHON_OTCPY_H
