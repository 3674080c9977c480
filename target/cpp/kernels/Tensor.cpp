//===- Tensor.cpp - kernel calls: tensors ---------------------------------===//
//
// Data movement (transposes, copies, slices, concatenation, expansion,
// tiling, padding, resizing) and indexing (gathers, scatters, one-hot).
//
//===----------------------------------------------------------------------===//

#include "target/cpp/KernelEmitter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace otc;
using namespace otc::emit;

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult KernelEmitter::transpose() {
  ArrayRef<int64_t> perm = i64s("perm");
  ArrayRef<int64_t> s = shapeOf(ins[0]);
  if (perm.size() != s.size())
    return k.emitOpError("transpose needs a perm of the input's rank");
  std::string sh = array("shape", s);
  std::string pm = array("perm", perm);
  os << "    " << fn("transpose") << "(" << s.size() << ", " << sh << ", " << pm
     << ", " << in(0) << ", " << out(0) << ", " << elemSize(ins[0]) << ");\n";
  return success();
}

LogicalResult KernelEmitter::copy() {
  os << "    " << fn("copy") << "(" << numel(ins[0]) * elemSize(ins[0]) << ", "
     << in(0) << ", " << out(0) << ");\n";
  return success();
}

/// Source offset and strides of a strided slice of `in`.
static std::pair<int64_t, SmallVector<int64_t>>
sliceView(ArrayRef<int64_t> in, ArrayRef<int64_t> starts,
          ArrayRef<int64_t> steps) {
  SmallVector<int64_t> base = contiguousStrides(in), strides;
  int64_t offset = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    offset += starts[d] * base[d];
    strides.push_back(steps[d] * base[d]);
  }
  return {offset, strides};
}

LogicalResult KernelEmitter::slice() {
  ArrayRef<int64_t> y = shapeOf(outs[0]);
  auto [offset, strides] =
      sliceView(shapeOf(ins[0]), i64s("starts"), i64s("steps"));
  std::string sh = array("shape", y);
  std::string ss = array("ss", strides);
  std::string ds = array("ds", contiguousStrides(y));
  os << "    " << fn("strided_copy") << "(" << y.size() << ", " << sh << ", "
     << in(0) << " + " << offset << ", " << ss << ", " << out(0) << ", " << ds
     << ", " << elemSize(outs[0]) << ");\n";
  return success();
}

LogicalResult KernelEmitter::sliceGrad() {
  ArrayRef<int64_t> dy = shapeOf(ins[0]);
  auto [offset, strides] =
      sliceView(shapeOf(outs[0]), i64s("starts"), i64s("steps"));
  std::string sh = array("shape", dy);
  std::string ss = array("ss", contiguousStrides(dy));
  std::string ds = array("ds", strides);
  // Negative steps: the destination strides must be non-negative, so walk
  // the source backwards instead.
  SmallVector<int64_t> srcStrides = contiguousStrides(dy);
  int64_t srcOffset = 0, dstOffset = offset;
  SmallVector<int64_t> dstStrides(strides);
  for (size_t d = 0; d < dy.size(); ++d)
    if (dstStrides[d] < 0 && dy[d] > 0) {
      dstOffset += dstStrides[d] * (dy[d] - 1);
      dstStrides[d] = -dstStrides[d];
      srcOffset += srcStrides[d] * (dy[d] - 1);
      srcStrides[d] = -srcStrides[d];
    }
  ss = array("ss2", srcStrides);
  ds = array("ds2", dstStrides);
  // (The fill value is host memory on every target.)
  os << "    static const float zero = 0.0f;\n"
     << "    " << fn("fill") << "(" << numel(outs[0]) << ", &zero, " << out(0)
     << ", 4);\n"
     << "    " << fn("strided_copy") << "(" << dy.size() << ", " << sh << ", "
     << in(0) << " + " << srcOffset << ", " << ss << ", " << out(0) << " + "
     << dstOffset << ", " << ds << ", 4);\n";
  return success();
}

LogicalResult KernelEmitter::concat() {
  ArrayRef<int64_t> y = shapeOf(outs[0]);
  int64_t axis = axisOf(y.size());
  SmallVector<int64_t> ds = contiguousStrides(y);
  std::string dst = array("ds", ds);
  int64_t offset = 0;
  for (auto [i, v] : llvm::enumerate(ins)) {
    ArrayRef<int64_t> s = shapeOf(v);
    std::string sh = array("shape" + std::to_string(i), s);
    std::string ss = array("ss" + std::to_string(i), contiguousStrides(s));
    os << "    " << fn("strided_copy") << "(" << s.size() << ", " << sh << ", "
       << in(i) << ", " << ss << ", " << out(0) << " + " << offset * ds[axis]
       << ", " << dst << ", " << elemSize(outs[0]) << ");\n";
    offset += s[axis];
  }
  return success();
}

LogicalResult KernelEmitter::expand() {
  ArrayRef<int64_t> y = shapeOf(outs[0]);
  std::string sh = array("shape", y);
  std::string ss = array("ss", broadcastStrides(shapeOf(ins[0]), y));
  std::string ds = array("ds", contiguousStrides(y));
  os << "    " << fn("strided_copy") << "(" << y.size() << ", " << sh << ", "
     << in(0) << ", " << ss << ", " << out(0) << ", " << ds << ", "
     << elemSize(outs[0]) << ");\n";
  return success();
}

LogicalResult KernelEmitter::tile() {
  // y viewed as [r0, d0, r1, d1, ...] reads x with stride 0 on the repeats.
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  ArrayRef<int64_t> reps = i64s("repeats");
  SmallVector<int64_t> shape, src, dst;
  SmallVector<int64_t> xs = contiguousStrides(x),
                       ys = contiguousStrides(shapeOf(outs[0]));
  for (size_t d = 0; d < x.size(); ++d) {
    shape.append({reps[d], x[d]});
    src.append({0, xs[d]});
    dst.append({x[d] * ys[d], ys[d]});
  }
  if (shape.size() > OTCK_MAX_RANK)
    return k.emitOpError("tile of rank above ")
           << OTCK_MAX_RANK / 2 << " is not supported";
  std::string sh = array("shape", shape);
  std::string ss = array("ss", src);
  std::string ds = array("ds", dst);
  os << "    " << fn("strided_copy") << "(" << shape.size() << ", " << sh
     << ", " << in(0) << ", " << ss << ", " << out(0) << ", " << ds << ", "
     << elemSize(outs[0]) << ");\n";
  return success();
}

static std::string padMode(StringRef m) {
  return m == "reflect" ? "OTCK_PAD_REFLECT"
         : m == "edge"  ? "OTCK_PAD_EDGE"
                        : "OTCK_PAD_CONSTANT";
}

LogicalResult KernelEmitter::pad() {
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  std::string sh = array("shape", x);
  std::string pb = array("pb", i64s("pads_begin"));
  std::string pe = array("pe", i64s("pads_end"));
  std::string value = "nullptr";
  Type t = typeOf(ins[0]).getElementType();
  if (str("mode") == "constant") {
    double v = f32("value");
    if (t.isF32())
      os << "    static const float value = " << floatLiteral(v) << ";\n";
    else if (t.isInteger(64))
      os << "    static const int64_t value = " << static_cast<int64_t>(v)
         << ";\n";
    else if (t.isInteger(32))
      os << "    static const int32_t value = " << static_cast<int32_t>(v)
         << ";\n";
    else
      os << "    static const uint8_t value = " << (v != 0) << ";\n";
    value = "&value";
  }
  os << "    " << fn("pad") << "(" << x.size() << ", " << sh << ", " << pb
     << ", " << pe << ", " << padMode(str("mode")) << ", " << value << ", "
     << in(0) << ", " << out(0) << ", " << elemSize(ins[0]) << ");\n";
  return success();
}

LogicalResult KernelEmitter::padGrad() {
  ArrayRef<int64_t> x = shapeOf(outs[0]);
  std::string sh = array("shape", x);
  std::string pb = array("pb", i64s("pads_begin"));
  std::string pe = array("pe", i64s("pads_end"));
  os << "    " << fn("pad_grad_f32") << "(" << x.size() << ", " << sh << ", "
     << pb << ", " << pe << ", " << padMode(str("mode")) << ", " << in(0)
     << ", " << out(0) << ");\n";
  return success();
}

LogicalResult KernelEmitter::trilu() {
  ArrayRef<int64_t> s = shapeOf(ins[0]);
  int64_t r = s.size(), rows = s[r - 2], cols = s[r - 1];
  os << "    " << fn("trilu") << "("
     << numel(ins[0]) / std::max<int64_t>(rows * cols, 1) << ", " << rows
     << ", " << cols << ", " << i64("k") << ", " << flag("upper") << ", "
     << in(0) << ", " << out(0) << ", " << elemSize(ins[0]) << ");\n";
  return success();
}

LogicalResult KernelEmitter::resize() {
  bool grad = k.getKernel() == "resize_grad";
  Value x = grad ? outs[0] : ins[0], y = grad ? ins[0] : outs[0];
  std::string is = array("in_shape", shapeOf(x));
  std::string ys = array("out_shape", shapeOf(y));
  ArrayRef<float> scales = f32s("scales");
  os << "    static const float scales[] = {";
  for (auto [i, s] : llvm::enumerate(scales))
    os << (i ? ", " : "") << floatLiteral(s);
  os << "};\n";
  std::string mode =
      str("mode") == "linear" ? "OTCK_RESIZE_LINEAR" : "OTCK_RESIZE_NEAREST";
  std::string coord =
      "OTCK_RESIZE_" + str("coordinate_transformation_mode").upper();
  std::string nearest = "OTCK_RESIZE_" + str("nearest_mode").upper();
  os << "    " << fn(grad ? "resize_grad_f32" : "resize_f32") << "("
     << shapeOf(x).size() << ", " << is << ", " << ys << ", scales, " << mode
     << ", " << coord << ", " << nearest << ", " << in(0) << ", " << out(0)
     << ");\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

LogicalResult KernelEmitter::gather() {
  if (!typeOf(ins[1]).getElementType().isInteger(64))
    return k.emitOpError("gather indices must be int64");
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  auto [outer, n, inner] = around(x, axisOf(x.size()));
  checkIndices(llvm::formatv("{8}({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7})",
                             outer, n, inner, in(0), numel(ins[1]), in(1),
                             out(0), elemSize(ins[0]), fn("gather"))
                   .str());
  return success();
}

LogicalResult KernelEmitter::gatherGrad() {
  if (!typeOf(ins[1]).getElementType().isInteger(64))
    return k.emitOpError("gather indices must be int64");
  ArrayRef<int64_t> x = shapeOf(outs[0]);
  auto [outer, n, inner] = around(x, axisOf(x.size()));
  checkIndices(llvm::formatv("{7}({0}, {1}, {2}, {3}, {4}, {5}, {6})", outer, n,
                             inner, numel(ins[1]), in(1), in(0), out(0),
                             fn("gather_grad_f32"))
                   .str());
  return success();
}

LogicalResult KernelEmitter::gatherElements() {
  if (!typeOf(ins[1]).getElementType().isInteger(64))
    return k.emitOpError("gather indices must be int64");
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  std::string xs = array("xs", x);
  std::string is = array("is", shapeOf(ins[1]));
  checkIndices(llvm::formatv("{8}({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7})",
                             x.size(), xs, is, axisOf(x.size()), in(0), in(1),
                             out(0), elemSize(ins[0]), fn("gather_elements"))
                   .str());
  return success();
}

LogicalResult KernelEmitter::gatherElementsGrad() {
  ArrayRef<int64_t> x = shapeOf(outs[0]);
  std::string xs = array("xs", x);
  std::string is = array("is", shapeOf(ins[1]));
  checkIndices(llvm::formatv("{7}({0}, {1}, {2}, {3}, {4}, {5}, {6})", x.size(),
                             xs, is, axisOf(x.size()), in(1), in(0), out(0),
                             fn("gather_elements_grad_f32"))
                   .str());
  return success();
}

LogicalResult KernelEmitter::scatterElements() {
  if (!typeOf(ins[1]).getElementType().isInteger(64))
    return k.emitOpError("scatter indices must be int64");
  ArrayRef<int64_t> x = shapeOf(ins[0]);
  std::string xs = array("xs", x);
  std::string is = array("is", shapeOf(ins[1]));
  std::string red = "OTCK_SCATTER_" + str("reduction").upper();
  checkIndices(llvm::formatv("{9}({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8})",
                             x.size(), xs, is, axisOf(x.size()), red, in(0),
                             in(1), in(2), out(0), fn("scatter_elements_f32"))
                   .str());
  return success();
}

LogicalResult KernelEmitter::oneHot() {
  if (!typeOf(ins[0]).getElementType().isInteger(64))
    return k.emitOpError("one_hot indices must be int64");
  ArrayRef<int64_t> y = shapeOf(outs[0]);
  int64_t axis = axisOf(y.size());
  auto [outer, depth, inner] = around(y, axis);
  os << "    " << fn("one_hot_f32") << "(" << outer << ", " << depth << ", "
     << inner << ", " << in(0) << ", " << floatLiteral(f32("off_value")) << ", "
     << floatLiteral(f32("on_value")) << ", " << out(0) << ");\n";
  return success();
}
