//===- OnnxImporter.cpp - ONNX model to graph dialect ---------------------===//
//
// ModelProto -> ONNX checker -> (version converter for old opsets) -> ONNX
// shape inference -> graph dialect. The checker is not a safety boundary:
// sizes, ranks, attributes and shapes are validated here too. Shape
// computations (Shape/Gather/Unsqueeze/Concat/Constant feeding Reshape) are
// evaluated at import time, so every tensor has a static type.
//
//===----------------------------------------------------------------------===//

#include "compiler/OnnxImporter.h"

#include "dialects/graph/GraphDialect.h"
#include "passes/Attributes.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <numeric>

using namespace mlir;
using namespace otc;

namespace {

constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 17;
/// Constants beyond this many elements are parameters or bugs, not shapes.
constexpr int64_t kMaxFoldedElements = 1 << 16;

/// A compile-time constant: shape computations and small literal tensors.
struct Const {
  SmallVector<int64_t> shape;
  bool isFloat = false;
  std::vector<int64_t> ints;
  std::vector<double> floats;

  int64_t size() const { return isFloat ? floats.size() : ints.size(); }
  double at(int64_t i) const { return isFloat ? floats[i] : ints[i]; }
};

/// What an ONNX value name refers to.
struct Entry {
  Value value;                 // a tensor in the graph, or
  std::optional<Const> folded; // a constant known at compile time
};

/// Operands that configure a node rather than carry data: a float
/// initializer used only there is a constant, not a parameter.
bool isConfigOperand(StringRef opType, int index) {
  if (opType == "Dropout")
    return index >= 1;
  if (opType == "Reshape" || opType == "Unsqueeze" || opType == "Squeeze")
    return index == 1;
  return false;
}

/// Tensors above this many elements (64 GiB of floats) are refused: every
/// count below it fits int64_t with room for byte offsets.
constexpr int64_t kMaxElements = int64_t(1) << 34;

int64_t numElements(ArrayRef<int64_t> shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

/// The element count of `shape`, or failure when a dimension is negative or
/// the count exceeds kMaxElements (checked, so it never overflows).
FailureOr<int64_t> checkedElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || llvm::MulOverflow(n, d, n) || n > kMaxElements)
      return failure();
  }
  return n;
}

class Importer {
public:
  Importer(MLIRContext *ctx, StringRef path, const ImportOptions &options)
      : ctx(ctx), b(ctx), path(path.str()), options(options) {}

  OwningOpRef<ModuleOp> run(StringRef bytes);

private:
  // Diagnostics.
  Location fileLoc() { return FileLineColLoc::get(ctx, path, 0, 0); }
  InFlightDiagnostic error() { return emitError(fileLoc()); }
  InFlightDiagnostic nodeError(const onnx::NodeProto &node) {
    auto diag = emitError(nodeLoc(node));
    if (!node.name().empty() || node.output_size() == 0)
      diag << "node '" << node.name() << "'";
    else
      diag << "node producing '" << node.output(0) << "'";
    diag << " (" << node.op_type() << ", opset " << opset << "): ";
    return diag;
  }
  Location nodeLoc(const onnx::NodeProto &node) {
    return NameLoc::get(
        b.getStringAttr(node.name().empty() ? node.op_type() : node.name()),
        fileLoc());
  }

  LogicalResult prepare(onnx::ModelProto &model);
  LogicalResult importGraph(const onnx::GraphProto &graph, ModuleOp module);
  FailureOr<RankedTensorType> inputType(const onnx::ValueInfoProto &info);
  LogicalResult importNode(const onnx::NodeProto &node);

  // Values.
  FailureOr<Entry *> operand(const onnx::NodeProto &node, int i);
  FailureOr<Value> tensor(const onnx::NodeProto &node, int i);
  FailureOr<Const *> constant(const onnx::NodeProto &node, int i);
  bool hasInput(const onnx::NodeProto &node, int i) {
    return i < node.input_size() && !node.input(i).empty();
  }
  void define(const onnx::NodeProto &node, int i, Value v) {
    values[node.output(i)] = Entry{v, std::nullopt};
  }
  void defineConst(const onnx::NodeProto &node, int i, Const c) {
    values[node.output(i)] = Entry{Value(), std::move(c)};
  }
  Value materialize(const Const &c, Location loc);

  // Attributes.
  const onnx::AttributeProto *attr(const onnx::NodeProto &node,
                                   StringRef name) {
    for (const auto &a : node.attribute())
      if (a.name() == name)
        return &a;
    return nullptr;
  }
  int64_t intAttr(const onnx::NodeProto &node, StringRef name, int64_t dflt) {
    auto *a = attr(node, name);
    return a ? a->i() : dflt;
  }
  float floatAttr(const onnx::NodeProto &node, StringRef name, float dflt) {
    auto *a = attr(node, name);
    return a ? a->f() : dflt;
  }

  FailureOr<Const> tensorToConst(const onnx::TensorProto &t, Location loc);
  LogicalResult reshapeTo(const onnx::NodeProto &node, Value input,
                          ArrayRef<int64_t> shape);
  FailureOr<SmallVector<int64_t>> normalizeAxes(const onnx::NodeProto &node,
                                                ArrayRef<int64_t> axes,
                                                int64_t rank);

  MLIRContext *ctx;
  OpBuilder b;
  std::string path;
  ImportOptions options;
  int64_t opset = 0;
  llvm::StringMap<Entry> values;
  int64_t dropoutStreams = 0;
};

LogicalResult Importer::prepare(onnx::ModelProto &model) {
  opset = 0;
  for (const auto &imp : model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx")
      opset = imp.version();
  if (opset == 0)
    return error() << "model imports no default-domain (ai.onnx) opset";
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    return error() << "ONNX checker rejected the model: " << e.what();
  }
  if (opset < kMinOpset) {
    try {
      // The adapters (Softmax 12->13, ...) need shapes.
      onnx::shape_inference::InferShapes(model);
      model = onnx::version_conversion::ConvertVersion(model, kMinOpset);
      opset = kMinOpset;
    } catch (const std::exception &e) {
      return error() << "opset " << opset << " is older than " << kMinOpset
                     << " and ONNX's version converter failed: " << e.what();
    }
  }
  if (opset > kMaxOpset)
    return error() << "opset " << opset << " is not supported (OTC supports "
                   << kMinOpset << " to " << kMaxOpset << ")";
  try {
    onnx::ShapeInferenceOptions opts{/*check_type=*/true, /*error_mode=*/1};
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception &e) {
    return error() << "ONNX shape inference failed: " << e.what();
  }
  return success();
}

FailureOr<RankedTensorType>
Importer::inputType(const onnx::ValueInfoProto &info) {
  if (!info.type().has_tensor_type())
    return error() << "input '" << info.name() << "' is not a tensor";
  const auto &tt = info.type().tensor_type();
  Type elt;
  switch (tt.elem_type()) {
  case onnx::TensorProto::FLOAT:
    elt = b.getF32Type();
    break;
  case onnx::TensorProto::INT64:
    elt = b.getI64Type();
    break;
  default:
    return error() << "input '" << info.name() << "' has element type "
                   << onnx::TensorProto::DataType_Name(
                          static_cast<onnx::TensorProto::DataType>(
                              tt.elem_type()))
                   << "; OTC supports float and int64 inputs";
  }
  if (!tt.has_shape())
    return error() << "input '" << info.name() << "' has no shape";
  SmallVector<int64_t> shape;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto &d = tt.shape().dim(i);
    if (i == 0 && options.batch > 0) {
      shape.push_back(options.batch);
    } else if (d.has_dim_value() && d.dim_value() == 0) {
      return error() << "input '" << info.name() << "' dimension " << i
                     << " is 0; empty tensors are not supported";
    } else if (d.has_dim_value() && d.dim_value() > 0) {
      shape.push_back(d.dim_value());
    } else if (i == 0) {
      return error() << "input '" << info.name()
                     << "' has a dynamic batch dimension"
                     << (d.has_dim_param() ? " '" + d.dim_param() + "'" : "")
                     << "; fix it with --batch N";
    } else {
      return error() << "input '" << info.name() << "' dimension " << i
                     << " is dynamic"
                     << (d.has_dim_param() ? " ('" + d.dim_param() + "')" : "")
                     << " and cannot be resolved; OTC needs static shapes "
                        "(only the batch dimension is set by --batch)";
    }
  }
  if (failed(checkedElements(shape)))
    return error() << "input '" << info.name() << "' has more than "
                   << kMaxElements << " elements";
  return RankedTensorType::get(shape, elt);
}

FailureOr<Const> Importer::tensorToConst(const onnx::TensorProto &t,
                                         Location loc) {
  Const c;
  for (int64_t d : t.dims()) {
    if (d < 0)
      return emitError(loc)
             << "tensor '" << t.name() << "' has a negative dimension";
    c.shape.push_back(d);
  }
  FailureOr<int64_t> count = checkedElements(c.shape);
  if (failed(count) || *count > kMaxFoldedElements)
    return emitError(loc) << "constant '" << t.name() << "' has more than "
                          << kMaxFoldedElements
                          << " elements; large constants must be initializers";
  int64_t n = *count;
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return emitError(loc) << "constant '" << t.name()
                          << "' uses external data, which OTC does not read";
  const std::string &raw = t.raw_data();
  auto rawCount = [&](size_t width) -> LogicalResult {
    if (raw.size() != static_cast<size_t>(n) * width)
      return emitError(loc)
             << "tensor '" << t.name() << "' holds " << raw.size()
             << " bytes of raw data for " << n << " elements";
    return success();
  };
  // raw_data holds n little-endian values of type Raw.
  auto fromRaw = [&](auto tag, auto &out) -> LogicalResult {
    using Raw = decltype(tag);
    if (failed(rawCount(sizeof(Raw))))
      return failure();
    for (int64_t i = 0; i < n; ++i) {
      Raw v;
      memcpy(&v, raw.data() + sizeof(Raw) * i, sizeof(Raw));
      out.push_back(v);
    }
    return success();
  };
  // Values come from raw_data when it is set, else from the typed field.
  auto read = [&](auto tag, const auto &field, auto &out) -> LogicalResult {
    if (!raw.empty())
      return fromRaw(tag, out);
    out.assign(field.begin(), field.end());
    return success();
  };
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    c.isFloat = true;
    if (failed(read(float(), t.float_data(), c.floats)))
      return failure();
    break;
  case onnx::TensorProto::DOUBLE:
    c.isFloat = true;
    if (failed(read(double(), t.double_data(), c.floats)))
      return failure();
    break;
  case onnx::TensorProto::INT64:
    if (failed(read(int64_t(), t.int64_data(), c.ints)))
      return failure();
    break;
  case onnx::TensorProto::INT32:
    if (failed(read(int32_t(), t.int32_data(), c.ints)))
      return failure();
    break;
  case onnx::TensorProto::BOOL:
    if (!raw.empty()) {
      if (failed(rawCount(1)))
        return failure();
      for (int64_t i = 0; i < n; ++i)
        c.ints.push_back(raw[i] != 0);
    } else {
      c.ints.assign(t.int32_data().begin(), t.int32_data().end());
    }
    break;
  default:
    return emitError(loc) << "constant '" << t.name() << "' has data type "
                          << onnx::TensorProto::DataType_Name(
                                 static_cast<onnx::TensorProto::DataType>(
                                     t.data_type()))
                          << ", which OTC does not support";
  }
  if (c.size() != n)
    return emitError(loc) << "tensor '" << t.name() << "' holds " << c.size()
                          << " values for shape of " << n << " elements";
  return c;
}

Value Importer::materialize(const Const &c, Location loc) {
  if (c.isFloat) {
    SmallVector<float> v(c.floats.begin(), c.floats.end());
    auto type = RankedTensorType::get(c.shape, b.getF32Type());
    return b.create<graph::ConstantOp>(
        loc, DenseElementsAttr::get(type, ArrayRef<float>(v)));
  }
  auto type = RankedTensorType::get(c.shape, b.getI64Type());
  return b.create<graph::ConstantOp>(
      loc, DenseElementsAttr::get(type, ArrayRef<int64_t>(c.ints)));
}

FailureOr<Entry *> Importer::operand(const onnx::NodeProto &node, int i) {
  if (!hasInput(node, i))
    return nodeError(node) << "input #" << i << " is missing";
  auto it = values.find(node.input(i));
  if (it == values.end())
    return nodeError(node) << "input '" << node.input(i)
                           << "' is not defined before use";
  return &it->second;
}

FailureOr<Value> Importer::tensor(const onnx::NodeProto &node, int i) {
  FailureOr<Entry *> e = operand(node, i);
  if (failed(e))
    return failure();
  if (!(*e)->value) {
    const Const &c = *(*e)->folded;
    if (!c.isFloat)
      return nodeError(node) << "integer tensor '" << node.input(i)
                             << "' used in arithmetic; OTC computes in float";
    (*e)->value = materialize(c, nodeLoc(node));
  }
  return (*e)->value;
}

FailureOr<Const *> Importer::constant(const onnx::NodeProto &node, int i) {
  FailureOr<Entry *> e = operand(node, i);
  if (failed(e))
    return failure();
  if (!(*e)->folded)
    return nodeError(node) << "input '" << node.input(i)
                           << "' must be a compile-time constant";
  return &*(*e)->folded;
}

FailureOr<SmallVector<int64_t>>
Importer::normalizeAxes(const onnx::NodeProto &node, ArrayRef<int64_t> axes,
                        int64_t rank) {
  SmallVector<int64_t> out;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return nodeError(node)
             << "axis " << a << " out of range for rank " << rank;
    out.push_back(a < 0 ? a + rank : a);
  }
  llvm::sort(out);
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    return nodeError(node) << "axes repeat an axis";
  return out;
}

LogicalResult Importer::reshapeTo(const onnx::NodeProto &node, Value input,
                                  ArrayRef<int64_t> shape) {
  auto in = llvm::cast<RankedTensorType>(input.getType());
  if (numElements(shape) != in.getNumElements())
    return nodeError(node) << "cannot reshape " << in << " to [" << shape
                           << "]";
  auto type = RankedTensorType::get(shape, in.getElementType());
  define(
      node, 0,
      type == in
          ? input
          : b.create<graph::ReshapeOp>(nodeLoc(node), type, input).getResult());
  return success();
}

/// Elementwise fold of two constants with numpy broadcasting.
template <typename Fn>
FailureOr<Const> foldBinary(const Const &l, const Const &r, Fn fn) {
  auto shape = graph::broadcastShapes(l.shape, r.shape);
  if (failed(shape))
    return failure();
  Const out;
  out.shape = *shape;
  out.isFloat = l.isFloat || r.isFloat;
  FailureOr<int64_t> count = checkedElements(out.shape);
  if (failed(count) || *count > kMaxFoldedElements)
    return failure();
  int64_t n = *count, rank = out.shape.size();
  SmallVector<int64_t> coord(rank);
  auto index = [&](const Const &c) {
    int64_t off = 0, cr = c.shape.size();
    for (int64_t k = 0; k < cr; ++k)
      off = off * c.shape[k] + (c.shape[k] == 1 ? 0 : coord[rank - cr + k]);
    return off;
  };
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t d = rank - 1, rem = i; d >= 0; --d) {
      coord[d] = rem % out.shape[d];
      rem /= out.shape[d];
    }
    double v = fn(l.at(index(l)), r.at(index(r)));
    if (out.isFloat)
      out.floats.push_back(v);
    else
      out.ints.push_back(static_cast<int64_t>(v));
  }
  return out;
}

LogicalResult Importer::importNode(const onnx::NodeProto &node) {
  StringRef op = node.op_type();
  Location loc = nodeLoc(node);
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return nodeError(node) << "unsupported operator domain '" << node.domain()
                           << "'";

  if (op == "Constant") {
    Const c;
    if (auto *a = attr(node, "value")) {
      FailureOr<Const> t = tensorToConst(a->t(), loc);
      if (failed(t))
        return failure();
      c = *t;
    } else if (auto *a = attr(node, "value_float")) {
      c.isFloat = true;
      c.floats = {a->f()};
    } else if (auto *a = attr(node, "value_floats")) {
      c.isFloat = true;
      c.floats.assign(a->floats().begin(), a->floats().end());
      c.shape = {static_cast<int64_t>(c.floats.size())};
    } else if (auto *a = attr(node, "value_int")) {
      c.ints = {a->i()};
    } else if (auto *a = attr(node, "value_ints")) {
      c.ints.assign(a->ints().begin(), a->ints().end());
      c.shape = {static_cast<int64_t>(c.ints.size())};
    } else {
      return nodeError(node) << "unsupported Constant form (sparse or string)";
    }
    defineConst(node, 0, std::move(c));
    return success();
  }

  if (op == "Identity" || (op == "Dropout" && !hasInput(node, 2))) {
    // Dropout without training_mode is the identity (ONNX inference mode).
    FailureOr<Entry *> e = operand(node, 0);
    if (failed(e))
      return failure();
    values[node.output(0)] = **e;
    if (op == "Dropout" && node.output_size() > 1 && !node.output(1).empty())
      return nodeError(node) << "the Dropout mask output is not supported";
    return success();
  }

  if (op == "Dropout") {
    FailureOr<Const *> mode = constant(node, 2);
    if (failed(mode))
      return failure();
    FailureOr<Value> x = tensor(node, 0);
    if (failed(x))
      return failure();
    if ((*mode)->size() != 1 || (*mode)->at(0) == 0) {
      values[node.output(0)] = Entry{*x, std::nullopt};
      return success();
    }
    float ratio = 0.5f;
    if (hasInput(node, 1)) {
      FailureOr<Const *> r = constant(node, 1);
      if (failed(r))
        return failure();
      if ((*r)->size() != 1)
        return nodeError(node) << "ratio must be a scalar";
      ratio = (*r)->at(0);
    }
    if (!(ratio >= 0.0f && ratio < 1.0f))
      return nodeError(node) << "ratio must be in [0, 1), got " << ratio;
    auto d = b.create<graph::DropoutOp>(loc, *x, b.getF32FloatAttr(ratio),
                                        b.getI64IntegerAttr(dropoutStreams++));
    define(node, 0, d.getResult());
    return success();
  }

  if (op == "Shape") {
    FailureOr<Entry *> e = operand(node, 0);
    if (failed(e))
      return failure();
    SmallVector<int64_t> shape =
        (*e)->value ? SmallVector<int64_t>(
                          llvm::cast<RankedTensorType>((*e)->value.getType())
                              .getShape())
                    : (*e)->folded->shape;
    int64_t rank = shape.size();
    int64_t start = intAttr(node, "start", 0), end = intAttr(node, "end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    Const c;
    c.shape = {std::max<int64_t>(end - start, 0)};
    for (int64_t i = start; i < end; ++i)
      c.ints.push_back(shape[i]);
    defineConst(node, 0, std::move(c));
    return success();
  }

  if (op == "Gather" || op == "Unsqueeze" || op == "Squeeze" ||
      op == "Concat" || op == "Cast") {
    // Shape computations: fold when every input is constant.
    bool allConst = true;
    for (int i = 0; i < node.input_size(); ++i) {
      if (!hasInput(node, i))
        continue;
      FailureOr<Entry *> e = operand(node, i);
      if (failed(e))
        return failure();
      allConst &= static_cast<bool>((*e)->folded);
    }
    if (op == "Cast") {
      int64_t to = intAttr(node, "to", 0);
      FailureOr<Entry *> e = operand(node, 0);
      if (failed(e))
        return failure();
      if ((*e)->folded) {
        // Folding keeps float values as double and integers as int64: the
        // targets below are the ones that representation is exact for.
        const Const &in = *(*e)->folded;
        Const c;
        c.shape = in.shape;
        switch (to) {
        case onnx::TensorProto::FLOAT:
        case onnx::TensorProto::DOUBLE:
          c.isFloat = true;
          for (int64_t i = 0; i < in.size(); ++i)
            c.floats.push_back(to == onnx::TensorProto::FLOAT
                                   ? static_cast<float>(in.at(i))
                                   : in.at(i));
          break;
        case onnx::TensorProto::INT64:
        case onnx::TensorProto::INT32:
          for (int64_t i = 0; i < in.size(); ++i) {
            double v = in.at(i);
            if (!(v >= -9.2e18 && v <= 9.2e18))
              return nodeError(node) << "cannot cast " << v << " to an integer";
            int64_t x = in.isFloat ? static_cast<int64_t>(v) : in.ints[i];
            c.ints.push_back(
                to == onnx::TensorProto::INT32 ? static_cast<int32_t>(x) : x);
          }
          break;
        case onnx::TensorProto::BOOL:
          for (int64_t i = 0; i < in.size(); ++i)
            c.ints.push_back(in.at(i) != 0);
          break;
        default:
          return nodeError(node)
                 << "unsupported Cast target type "
                 << onnx::TensorProto::DataType_Name(
                        static_cast<onnx::TensorProto::DataType>(to));
        }
        defineConst(node, 0, std::move(c));
        return success();
      }
      auto t = llvm::cast<RankedTensorType>((*e)->value.getType());
      if (to == onnx::TensorProto::FLOAT && t.getElementType().isF32()) {
        define(node, 0, (*e)->value);
        return success();
      }
      return nodeError(node) << "unsupported operator: Cast of a runtime "
                                "tensor to another element type";
    }
    if (op == "Unsqueeze" || op == "Squeeze") {
      FailureOr<Entry *> e = operand(node, 0);
      if (failed(e))
        return failure();
      SmallVector<int64_t> inShape =
          (*e)->value ? SmallVector<int64_t>(
                            llvm::cast<RankedTensorType>((*e)->value.getType())
                                .getShape())
                      : (*e)->folded->shape;
      SmallVector<int64_t> axes;
      if (hasInput(node, 1)) {
        FailureOr<Const *> a = constant(node, 1);
        if (failed(a))
          return failure();
        axes.assign((*a)->ints.begin(), (*a)->ints.end());
      }
      SmallVector<int64_t> outShape;
      if (op == "Unsqueeze") {
        int64_t rank = inShape.size() + axes.size();
        auto norm = normalizeAxes(node, axes, rank);
        if (failed(norm))
          return failure();
        auto it = inShape.begin();
        for (int64_t d = 0; d < rank; ++d)
          outShape.push_back(llvm::is_contained(*norm, d) ? 1 : *it++);
      } else {
        auto norm = normalizeAxes(node, axes, inShape.size());
        if (failed(norm))
          return failure();
        for (auto [d, s] : llvm::enumerate(inShape)) {
          bool drop =
              norm->empty() ? s == 1 : llvm::is_contained(*norm, (int64_t)d);
          if (drop && s != 1)
            return nodeError(node)
                   << "cannot squeeze dimension " << d << " of size " << s;
          if (!drop)
            outShape.push_back(s);
        }
      }
      if ((*e)->folded) {
        Const c = *(*e)->folded;
        c.shape = outShape;
        defineConst(node, 0, std::move(c));
        return success();
      }
      return reshapeTo(node, (*e)->value, outShape);
    }
    if (!allConst)
      return nodeError(node) << "unsupported operator: " << op
                             << " on runtime tensors (only shape "
                                "computations on constants are folded)";
    if (op == "Gather") {
      FailureOr<Const *> dataC = constant(node, 0), idxC = constant(node, 1);
      if (failed(dataC) || failed(idxC))
        return failure();
      Const *data = *dataC, *idx = *idxC;
      int64_t axis = intAttr(node, "axis", 0);
      int64_t rank = data->shape.size();
      if (rank == 0 || axis < -rank || axis >= rank)
        return nodeError(node) << "axis " << axis << " out of range";
      axis = axis < 0 ? axis + rank : axis;
      int64_t outer = numElements(ArrayRef(data->shape).take_front(axis));
      int64_t inner = numElements(ArrayRef(data->shape).drop_front(axis + 1));
      int64_t dim = data->shape[axis];
      Const c;
      c.isFloat = data->isFloat;
      c.shape.append(data->shape.begin(), data->shape.begin() + axis);
      c.shape.append(idx->shape.begin(), idx->shape.end());
      c.shape.append(data->shape.begin() + axis + 1, data->shape.end());
      FailureOr<int64_t> count = checkedElements(c.shape);
      if (failed(count) || *count > kMaxFoldedElements)
        return nodeError(node) << "folded result is too large";
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < idx->size(); ++k) {
          int64_t j = static_cast<int64_t>(idx->at(k));
          if (j < -dim || j >= dim)
            return nodeError(node) << "index " << j << " out of range";
          j = j < 0 ? j + dim : j;
          for (int64_t in = 0; in < inner; ++in) {
            int64_t src = (o * dim + j) * inner + in;
            if (c.isFloat)
              c.floats.push_back(data->floats[src]);
            else
              c.ints.push_back(data->ints[src]);
          }
        }
      defineConst(node, 0, std::move(c));
      return success();
    }
    // Concat of constants (1-D shape vectors, or any rank along axis).
    int64_t axis = intAttr(node, "axis", 0);
    SmallVector<Const *> parts;
    for (int i = 0; i < node.input_size(); ++i) {
      FailureOr<Const *> p = constant(node, i);
      if (failed(p))
        return failure();
      parts.push_back(*p);
    }
    const Const &first = *parts.front();
    int64_t rank = first.shape.size();
    if (rank == 0 || axis < -rank || axis >= rank)
      return nodeError(node) << "axis " << axis << " out of range";
    axis = axis < 0 ? axis + rank : axis;
    Const c;
    c.isFloat = first.isFloat;
    c.shape = first.shape;
    c.shape[axis] = 0;
    for (Const *p : parts) {
      if (static_cast<int64_t>(p->shape.size()) != rank ||
          p->isFloat != c.isFloat)
        return nodeError(node) << "inputs differ in rank or element type";
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis && p->shape[d] != first.shape[d])
          return nodeError(node) << "inputs differ in dimension " << d;
      c.shape[axis] += p->shape[axis];
    }
    FailureOr<int64_t> count = checkedElements(c.shape);
    if (failed(count) || *count > kMaxFoldedElements)
      return nodeError(node) << "folded result is too large";
    int64_t outer = numElements(ArrayRef(c.shape).take_front(axis));
    int64_t inner = numElements(ArrayRef(c.shape).drop_front(axis + 1));
    for (int64_t o = 0; o < outer; ++o)
      for (Const *p : parts) {
        int64_t chunk = p->shape[axis] * inner;
        for (int64_t k = 0; k < chunk; ++k) {
          if (c.isFloat)
            c.floats.push_back(p->floats[o * chunk + k]);
          else
            c.ints.push_back(p->ints[o * chunk + k]);
        }
      }
    defineConst(node, 0, std::move(c));
    return success();
  }

  if (op == "Reshape") {
    FailureOr<Const *> shapeC = constant(node, 1);
    if (failed(shapeC))
      return failure();
    FailureOr<Entry *> e = operand(node, 0);
    if (failed(e))
      return failure();
    SmallVector<int64_t> inShape =
        (*e)->value ? SmallVector<int64_t>(
                          llvm::cast<RankedTensorType>((*e)->value.getType())
                              .getShape())
                    : (*e)->folded->shape;
    bool allowZero = intAttr(node, "allowzero", 0) != 0;
    SmallVector<int64_t> shape;
    int64_t inferred = -1;
    for (auto [i, d] : llvm::enumerate((*shapeC)->ints)) {
      if (d == 0 && !allowZero) {
        if (i >= inShape.size())
          return nodeError(node) << "shape entry 0 copies a missing dimension";
        shape.push_back(inShape[i]);
      } else if (d == -1) {
        if (inferred >= 0)
          return nodeError(node) << "shape has more than one -1";
        inferred = i;
        shape.push_back(1);
      } else if (d < 0) {
        return nodeError(node) << "invalid shape entry " << d;
      } else {
        shape.push_back(d);
      }
    }
    int64_t total = numElements(inShape), known = numElements(shape);
    if (inferred >= 0) {
      if (known == 0 || total % known != 0)
        return nodeError(node)
               << "cannot infer -1 reshaping " << total << " elements";
      shape[inferred] = total / known;
    }
    if ((*e)->folded) {
      Const c = *(*e)->folded;
      if (numElements(shape) != c.size())
        return nodeError(node) << "cannot reshape constant";
      c.shape = shape;
      defineConst(node, 0, std::move(c));
      return success();
    }
    return reshapeTo(node, (*e)->value, shape);
  }

  if (op == "Flatten") {
    FailureOr<Value> x = tensor(node, 0);
    if (failed(x))
      return failure();
    auto t = llvm::cast<RankedTensorType>(x->getType());
    int64_t rank = t.getRank(), axis = intAttr(node, "axis", 1);
    if (axis < -rank || axis > rank)
      return nodeError(node) << "axis " << axis << " out of range";
    axis = axis < 0 ? axis + rank : axis;
    return reshapeTo(node, *x,
                     {numElements(t.getShape().take_front(axis)),
                      numElements(t.getShape().drop_front(axis))});
  }

  // Everything below computes on runtime tensors.
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    FailureOr<Entry *> l = operand(node, 0), r = operand(node, 1);
    if (failed(l) || failed(r))
      return failure();
    if ((*l)->folded && (*r)->folded) {
      if (op == "Div" && !(*l)->folded->isFloat && !(*r)->folded->isFloat &&
          llvm::is_contained((*r)->folded->ints, 0))
        return nodeError(node) << "integer division by zero";
      auto fold = [&](auto fn) {
        return foldBinary(*(*l)->folded, *(*r)->folded, fn);
      };
      FailureOr<Const> c =
          op == "Add"   ? fold([](double a, double b) { return a + b; })
          : op == "Sub" ? fold([](double a, double b) { return a - b; })
          : op == "Mul" ? fold([](double a, double b) { return a * b; })
                        : fold([](double a, double b) { return a / b; });
      if (failed(c))
        return nodeError(node) << "cannot fold constants: shapes are not "
                                  "broadcastable or the result is too large";
      defineConst(node, 0, std::move(*c));
      return success();
    }
    FailureOr<Value> lv = tensor(node, 0), rv = tensor(node, 1);
    if (failed(lv) || failed(rv))
      return failure();
    auto lt = llvm::cast<RankedTensorType>(lv->getType());
    auto rt = llvm::cast<RankedTensorType>(rv->getType());
    if (failed(graph::broadcastShapes(lt.getShape(), rt.getShape())))
      return nodeError(node) << "operand shapes " << lt << " and " << rt
                             << " are not broadcastable";
    if (!lt.getElementType().isF32() || !rt.getElementType().isF32())
      return nodeError(node)
             << "OTC computes in float32, got " << lt << " and " << rt;
    Value v = op == "Add"   ? b.create<graph::AddOp>(loc, *lv, *rv).getResult()
              : op == "Sub" ? b.create<graph::SubOp>(loc, *lv, *rv).getResult()
              : op == "Mul" ? b.create<graph::MulOp>(loc, *lv, *rv).getResult()
                            : b.create<graph::DivOp>(loc, *lv, *rv).getResult();
    define(node, 0, v);
    return success();
  }

  if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "Neg" ||
      op == "Exp" || op == "Log" || op == "Sqrt") {
    FailureOr<Value> x = tensor(node, 0);
    if (failed(x))
      return failure();
    if (!llvm::cast<RankedTensorType>(x->getType()).getElementType().isF32())
      return nodeError(node) << "expects a float32 input";
    Value v;
    if (op == "Relu")
      v = b.create<graph::ReluOp>(loc, *x);
    else if (op == "Sigmoid")
      v = b.create<graph::SigmoidOp>(loc, *x);
    else if (op == "Tanh")
      v = b.create<graph::TanhOp>(loc, *x);
    else if (op == "Neg")
      v = b.create<graph::NegOp>(loc, *x);
    else if (op == "Exp")
      v = b.create<graph::ExpOp>(loc, *x);
    else if (op == "Log")
      v = b.create<graph::LogOp>(loc, *x);
    else
      v = b.create<graph::SqrtOp>(loc, *x);
    define(node, 0, v);
    return success();
  }

  if (op == "Softmax" || op == "LogSoftmax") {
    FailureOr<Value> x = tensor(node, 0);
    if (failed(x))
      return failure();
    int64_t rank = llvm::cast<RankedTensorType>(x->getType()).getRank();
    int64_t axis = intAttr(node, "axis", -1);
    if (axis < -rank || axis >= rank)
      return nodeError(node)
             << "axis " << axis << " out of range for rank " << rank;
    Value v = op == "Softmax"
                  ? b.create<graph::SoftmaxOp>(loc, *x, axis).getResult()
                  : b.create<graph::LogSoftmaxOp>(loc, *x, axis).getResult();
    define(node, 0, v);
    return success();
  }

  if (op == "Transpose") {
    FailureOr<Value> x = tensor(node, 0);
    if (failed(x))
      return failure();
    int64_t rank = llvm::cast<RankedTensorType>(x->getType()).getRank();
    SmallVector<int64_t> perm;
    if (auto *a = attr(node, "perm"))
      perm.assign(a->ints().begin(), a->ints().end());
    else
      for (int64_t i = rank - 1; i >= 0; --i)
        perm.push_back(i);
    SmallVector<bool> seen(rank, false);
    for (int64_t p : perm) {
      if (p < 0 || p >= rank || seen[p] ||
          perm.size() != static_cast<size_t>(rank))
        return nodeError(node)
               << "perm is not a permutation of 0.." << rank - 1;
      seen[p] = true;
    }
    define(node, 0, b.create<graph::TransposeOp>(loc, *x, perm));
    return success();
  }

  if (op == "Gemm") {
    FailureOr<Value> a = tensor(node, 0), bb = tensor(node, 1);
    if (failed(a) || failed(bb))
      return failure();
    Value c;
    if (hasInput(node, 2)) {
      FailureOr<Value> cv = tensor(node, 2);
      if (failed(cv))
        return failure();
      c = *cv;
    }
    auto at = llvm::cast<RankedTensorType>(a->getType());
    auto bt = llvm::cast<RankedTensorType>(bb->getType());
    bool ta = intAttr(node, "transA", 0), tb = intAttr(node, "transB", 0);
    if (at.getRank() != 2 || bt.getRank() != 2)
      return nodeError(node)
             << "Gemm needs 2-D A and B, got " << at << " and " << bt;
    if (at.getDimSize(ta ? 0 : 1) != bt.getDimSize(tb ? 1 : 0))
      return nodeError(node)
             << "inner dimensions differ: " << at << " and " << bt;
    auto g = b.create<graph::GemmOp>(
        loc, *a, *bb, c, b.getF32FloatAttr(floatAttr(node, "alpha", 1.0f)),
        b.getF32FloatAttr(floatAttr(node, "beta", 1.0f)), b.getBoolAttr(ta),
        b.getBoolAttr(tb));
    if (c) {
      auto shape = graph::broadcastShapes(
          llvm::cast<RankedTensorType>(c.getType()).getShape(),
          g.getType().getShape());
      if (failed(shape) || ArrayRef<int64_t>(*shape) != g.getType().getShape())
        return nodeError(node) << "C of type " << c.getType()
                               << " does not broadcast to " << g.getType();
    }
    define(node, 0, g);
    return success();
  }

  if (op == "MatMul") {
    FailureOr<Value> a = tensor(node, 0), bb = tensor(node, 1);
    if (failed(a) || failed(bb))
      return failure();
    auto at = llvm::cast<RankedTensorType>(a->getType());
    auto bt = llvm::cast<RankedTensorType>(bb->getType());
    if (at.getRank() != 2 || bt.getRank() != 2)
      return nodeError(node)
             << "unsupported operator form: MatMul of " << at << " and " << bt
             << " (only 2-D operands are supported)";
    if (at.getDimSize(1) != bt.getDimSize(0))
      return nodeError(node)
             << "inner dimensions differ: " << at << " and " << bt;
    define(node, 0, b.create<graph::MatMulOp>(loc, *a, *bb));
    return success();
  }

  return nodeError(node) << "unsupported operator " << op;
}

LogicalResult Importer::importGraph(const onnx::GraphProto &graph,
                                    ModuleOp module) {
  // Initializers: float ones are parameters, the rest constants.
  llvm::StringMap<const onnx::TensorProto *> initializers;
  for (const auto &init : graph.initializer()) {
    if (init.name().empty())
      return error() << "an initializer has no name";
    initializers[init.name()] = &init;
  }
  if (graph.sparse_initializer_size() > 0)
    return error() << "sparse initializers are not supported";

  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<std::string> argNames;
  for (const auto &in : graph.input()) {
    if (initializers.count(in.name()))
      continue; // IR < 4 lists initializers as inputs too
    FailureOr<RankedTensorType> t = inputType(in);
    if (failed(t))
      return failure();
    argTypes.push_back(*t);
    argAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr(attr::kInput, b.getStringAttr(in.name())),
         b.getNamedAttr(attr::kRole, b.getStringAttr("data"))}));
    argNames.push_back(in.name());
  }
  if (argTypes.empty())
    return error() << "the model has no inputs";
  // The runtime batches every input along its first dimension.
  for (auto [t, name] : llvm::zip(argTypes, argNames)) {
    if (!options.batchedInputs)
      break;
    auto rt = llvm::cast<RankedTensorType>(t);
    auto first = llvm::cast<RankedTensorType>(argTypes.front());
    if (rt.getRank() == 0)
      return error() << "input '" << name
                     << "' is a scalar; every input needs a batch dimension";
    if (rt.getDimSize(0) != first.getDimSize(0))
      return error() << "inputs '" << argNames.front() << "' and '" << name
                     << "' disagree on the batch dimension ("
                     << first.getDimSize(0) << " vs " << rt.getDimSize(0)
                     << ")";
  }
  // Float initializers are parameters unless only configuration uses them.
  llvm::StringSet<> dataUses, anyUses;
  for (const auto &node : graph.node())
    for (int i = 0; i < node.input_size(); ++i) {
      anyUses.insert(node.input(i));
      if (!isConfigOperand(node.op_type(), i))
        dataUses.insert(node.input(i));
    }
  for (const auto &out : graph.output())
    dataUses.insert(out.name());
  SmallVector<std::pair<std::string, Const>> constInits;
  for (const auto &init : graph.initializer()) {
    if (init.data_type() == onnx::TensorProto::FLOAT &&
        dataUses.contains(init.name())) {
      SmallVector<int64_t> shape;
      for (int64_t d : init.dims()) {
        if (d < 0)
          return error() << "initializer '" << init.name()
                         << "' has a negative dimension";
        shape.push_back(d);
      }
      if (failed(checkedElements(shape)))
        return error() << "initializer '" << init.name() << "' has more than "
                       << kMaxElements << " elements";
      argTypes.push_back(RankedTensorType::get(shape, b.getF32Type()));
      argAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(attr::kParam, b.getStringAttr(init.name()))));
      argNames.push_back(init.name());
    } else if (anyUses.contains(init.name())) {
      FailureOr<Const> c = tensorToConst(init, fileLoc());
      if (failed(c))
        return failure();
      constInits.emplace_back(init.name(), std::move(*c));
    }
  }

  b.setInsertionPointToEnd(module.getBody());
  auto fn = b.create<func::FuncOp>(fileLoc(), attr::kForwardFn,
                                   b.getFunctionType(argTypes, {}));
  fn.setAllArgAttrs(argAttrs);
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  for (auto [i, name] : llvm::enumerate(argNames))
    values[name] = Entry{fn.getArgument(i), std::nullopt};
  for (auto &[name, c] : constInits)
    values[name] = Entry{Value(), std::move(c)};

  for (const auto &node : graph.node())
    if (failed(importNode(node)))
      return failure();

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const auto &out : graph.output()) {
    auto it = values.find(out.name());
    if (it == values.end())
      return error() << "graph output '" << out.name() << "' is never defined";
    Value v = it->second.value;
    if (!v) {
      if (!it->second.folded->isFloat)
        return error() << "graph output '" << out.name()
                       << "' is an integer constant";
      v = materialize(*it->second.folded, fileLoc());
    }
    results.push_back(v);
    resultTypes.push_back(v.getType());
  }
  if (results.empty())
    return error() << "the model has no outputs";
  b.create<func::ReturnOp>(fileLoc(), results);
  fn.setFunctionType(b.getFunctionType(argTypes, resultTypes));
  for (auto [i, out] : llvm::enumerate(graph.output()))
    fn.setResultAttr(i, attr::kOutput, b.getStringAttr(out.name()));
  return success();
}

OwningOpRef<ModuleOp> Importer::run(StringRef bytes) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    error() << "not a valid ONNX model: the protobuf could not be parsed "
               "(truncated or not an ONNX file?)";
    return nullptr;
  }
  if (!model.has_graph()) {
    error() << "not a valid ONNX model: no graph";
    return nullptr;
  }
  if (failed(prepare(model)))
    return nullptr;
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc());
  if (!path.empty() && path != "-") {
    SmallString<256> abs(path);
    llvm::sys::fs::make_absolute(abs);
    (*module)->setAttr(attr::kModelPath, b.getStringAttr(abs));
  }
  if (failed(importGraph(model.graph(), *module)))
    return nullptr;
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

OwningOpRef<ModuleOp> otc::importOnnxFile(StringRef path, MLIRContext *context,
                                          const ImportOptions &options) {
  context->loadDialect<graph::GraphDialect, func::FuncDialect>();
  auto file = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false);
  if (!file) {
    emitError(UnknownLoc::get(context))
        << "cannot read '" << path << "': " << file.getError().message();
    return nullptr;
  }
  return Importer(context, path, options).run((*file)->getBuffer());
}

void otc::registerImportOnnxTranslation() {
  static llvm::cl::opt<int64_t> batch(
      "onnx-batch", llvm::cl::desc("First dimension of every graph input"),
      llvm::cl::init(0));
  TranslateToMLIRRegistration reg(
      "import-onnx", "import an ONNX model into the graph dialect",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *ctx) -> OwningOpRef<Operation *> {
        ctx->loadDialect<graph::GraphDialect, func::FuncDialect>();
        const llvm::MemoryBuffer *buf =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        ImportOptions options;
        options.batch = batch;
        OwningOpRef<ModuleOp> m =
            Importer(ctx, buf->getBufferIdentifier(), options)
                .run(buf->getBuffer());
        return OwningOpRef<Operation *>(m.release());
      },
      [](DialectRegistry &registry) { registerAllDialects(registry); });
}
