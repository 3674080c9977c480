//===- tensor.cpp - Python values as host buffers of a spec ---------------===//

#include "tensor.h"

#include <pybind11/numpy.h>

#include <cstring>

namespace otcpy {

// The DLPack ABI (dlpack.h, v0.x: the unversioned DLManagedTensor that
// __dlpack__ returns in a capsule named "dltensor").
namespace {
enum DLDeviceType : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };
enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLBfloat = 4,
  kDLBool = 6
};
struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides; // in elements; NULL: compact row-major
  uint64_t byte_offset;
};
} // namespace

struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(DLManagedTensor *self);
};

void HostTensor::DLDeleter::operator()(DLManagedTensor *t) const {
  if (t && t->deleter)
    t->deleter(t);
}

HostTensor::~HostTensor() = default;

namespace {

[[noreturn]] void mismatch(const char *what, const TensorSpec &spec,
                           const std::string &field, const std::string &need,
                           const std::string &got) {
  raiseError(OTC_INVALID_ARGUMENT, std::string(what) + " '" + spec.name +
                                       "' needs " + field + " " + need +
                                       ", got " + got);
}

void checkShape(const char *what, const TensorSpec &spec,
                const std::vector<int64_t> &shape) {
  if (shape != spec.shape)
    mismatch(what, spec, "shape", shapeString(spec.shape), shapeString(shape));
}

bool dlDtypeMatches(const DLDataType &t, otc_dtype_t d) {
  if (t.lanes != 1)
    return false;
  switch (d) {
  case OTC_DTYPE_F32:
    return t.code == kDLFloat && t.bits == 32;
  case OTC_DTYPE_F64:
    return t.code == kDLFloat && t.bits == 64;
  case OTC_DTYPE_F16:
    return t.code == kDLFloat && t.bits == 16;
  case OTC_DTYPE_BF16:
    return t.code == kDLBfloat && t.bits == 16;
  case OTC_DTYPE_I8:
    return t.code == kDLInt && t.bits == 8;
  case OTC_DTYPE_I16:
    return t.code == kDLInt && t.bits == 16;
  case OTC_DTYPE_I32:
    return t.code == kDLInt && t.bits == 32;
  case OTC_DTYPE_I64:
    return t.code == kDLInt && t.bits == 64;
  case OTC_DTYPE_U8:
    return t.code == kDLUInt && t.bits == 8;
  case OTC_DTYPE_U16:
    return t.code == kDLUInt && t.bits == 16;
  case OTC_DTYPE_U32:
    return t.code == kDLUInt && t.bits == 32;
  case OTC_DTYPE_U64:
    return t.code == kDLUInt && t.bits == 64;
  case OTC_DTYPE_BOOL:
    // torch before 2.0 exports bool as 8-bit unsigned.
    return (t.code == kDLBool || t.code == kDLUInt) && t.bits == 8;
  }
  return false;
}

std::string dlDtypeName(const DLDataType &t) {
  const char *code = t.code == kDLInt      ? "int"
                     : t.code == kDLUInt   ? "uint"
                     : t.code == kDLFloat  ? "float"
                     : t.code == kDLBfloat ? "bfloat"
                     : t.code == kDLBool   ? "bool"
                                           : nullptr;
  std::string s = code ? code : "code" + std::to_string(t.code) + "_";
  s += std::to_string(t.bits);
  if (t.lanes != 1)
    s += "x" + std::to_string(t.lanes);
  return s;
}

std::string dlDeviceName(int32_t type) {
  switch (type) {
  case kDLCUDA:
    return "cuda";
  case 4:
    return "opencl";
  case 7:
    return "vulkan";
  case 8:
    return "metal";
  case 10:
    return "rocm";
  default:
    return "DLPack device type " + std::to_string(type);
  }
}

// Copies a strided tensor (strides in elements) into `dst`, row-major.
void stridedCopy(const uint8_t *src, const int64_t *shape,
                 const int64_t *strides, int32_t ndim, size_t elem,
                 uint8_t *dst) {
  if (ndim == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  std::vector<int64_t> index(size_t(ndim), 0);
  int64_t total = 1;
  for (int32_t d = 0; d < ndim; ++d)
    total *= shape[d];
  int64_t offset = 0; // elements from src
  for (int64_t i = 0; i < total; ++i) {
    std::memcpy(dst + size_t(i) * elem, src + offset * int64_t(elem), elem);
    for (int32_t d = ndim - 1; d >= 0; --d) {
      if (++index[size_t(d)] < shape[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (shape[d] - 1);
      index[size_t(d)] = 0;
    }
  }
}

bool compactStrides(const DLTensor &t) {
  if (!t.strides)
    return true;
  int64_t expect = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expect)
      return false;
    expect *= t.shape[d];
  }
  return true;
}

} // namespace

HostTensor HostTensor::from(py::handle value, const TensorSpec &spec,
                            const char *what) {
  HostTensor out;
  out.bytes_ = spec.bytes();
  py::module_ np = py::module_::import("numpy");
  bool isArray = py::isinstance<py::array>(value);
  if (!isArray && py::hasattr(value, "__dlpack__")) {
    if (py::hasattr(value, "__dlpack_device__")) {
      py::tuple dev = value.attr("__dlpack_device__")();
      int32_t type = dev[0].cast<int32_t>();
      if (type != kDLCPU && type != kDLCUDAHost)
        raiseError(OTC_INVALID_ARGUMENT,
                   std::string(what) + " '" + spec.name + "' is on " +
                       dlDeviceName(type) +
                       "; OTC takes host memory (e.g. tensor.cpu())");
    }
    py::object capsule = value.attr("__dlpack__")();
    auto *m = static_cast<DLManagedTensor *>(
        PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
    if (!m)
      throw py::error_already_set();
    // Consumed: the capsule no longer calls the deleter, dl_ does.
    PyCapsule_SetName(capsule.ptr(), "used_dltensor");
    out.dl_.reset(m);
    const DLTensor &t = m->dl_tensor;
    if (!dlDtypeMatches(t.dtype, spec.dtype))
      mismatch(what, spec, "dtype", numpyDtypeName(spec.dtype),
               dlDtypeName(t.dtype));
    checkShape(what, spec, std::vector<int64_t>(t.shape, t.shape + t.ndim));
    const auto *base = static_cast<const uint8_t *>(t.data) + t.byte_offset;
    if (compactStrides(t)) {
      out.data_ = base;
    } else {
      out.copy_.resize(out.bytes_);
      stridedCopy(base, t.shape, t.strides, t.ndim, otc_dtype_size(spec.dtype),
                  out.copy_.data());
      out.data_ = out.copy_.data();
      out.copied_ = true;
    }
    return out;
  }
  py::dtype want = np.attr("dtype")(numpyDtypeName(spec.dtype));
  py::array array;
  if (isArray) {
    array = py::reinterpret_borrow<py::array>(value);
    if (!array.dtype().equal(want))
      mismatch(what, spec, "dtype", numpyDtypeName(spec.dtype),
               py::str(array.dtype()).cast<std::string>());
  } else {
    // A sequence or scalar has no dtype of its own: it takes the spec's.
    array = np.attr("asarray")(value, want);
  }
  checkShape(what, spec,
             std::vector<int64_t>(array.shape(), array.shape() + array.ndim()));
  if (!(array.flags() & py::array::c_style)) {
    array = np.attr("ascontiguousarray")(array);
    out.copied_ = true;
  }
  out.keep_ = array;
  out.data_ = array.data();
  return out;
}

} // namespace otcpy
