//===- tensor.h - Python values as host buffers of a spec -------*- C++ -*-===//
//
// What a train step, an eval step or set_parameters receives: a NumPy array,
// any object with __dlpack__ (a torch tensor), or a nested sequence. The
// value must have the spec's dtype and shape exactly (otc.Error otherwise,
// naming the tensor, what it needs and what it got). A C-contiguous value
// in host memory is used in place (the runtime copies it into the arena, the
// only copy); any other layout is copied once into a contiguous buffer.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_PYTHON_TENSOR_H
#define OTC_PYTHON_TENSOR_H

#include "otcpy.h"

#include <memory>

namespace otcpy {

struct DLManagedTensor;

class HostTensor {
public:
  /// `what` names the kind of tensor in messages ("input", "parameter").
  static HostTensor from(py::handle value, const TensorSpec &spec,
                         const char *what);

  HostTensor(HostTensor &&) = default;
  HostTensor &operator=(HostTensor &&) = default;
  ~HostTensor();

  const void *data() const { return data_; }
  size_t bytes() const { return bytes_; }
  /// Whether the value had to be copied to be contiguous.
  bool copied() const { return copied_; }

private:
  HostTensor() = default;

  const void *data_ = nullptr;
  size_t bytes_ = 0;
  bool copied_ = false;
  py::object keep_;           // the array viewed
  std::vector<uint8_t> copy_; // a DLPack tensor made contiguous
  struct DLDeleter {
    void operator()(DLManagedTensor *t) const;
  };
  std::unique_ptr<DLManagedTensor, DLDeleter> dl_;
};

} // namespace otcpy

#endif // OTC_PYTHON_TENSOR_H
