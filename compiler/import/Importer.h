//===- Importer.h - ONNX importer internals ---------------------*- C++ -*-===//
//
// Shared by the importer's core (compiler/OnnxImporter.cpp) and its op
// handlers (compiler/import/*Ops.cpp): the value table, compile-time
// constants and the helpers handlers use. Not a public header.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_COMPILER_IMPORT_IMPORTER_H
#define OTC_COMPILER_IMPORT_IMPORTER_H

#include "compiler/OnnxImporter.h"

#include "dialects/graph/GraphDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <numeric>
#include <optional>
#include <vector>

namespace otc::importer {

using namespace mlir;

constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 23;
/// The newest opset the ONNX library (1.12) checks and infers; newer models
/// are rewritten into its form first (OpsetAdapter.cpp).
constexpr int64_t kLibraryOpset = 17;
/// OTC's operator domain: operators of opsets newer than the ONNX library
/// knows (OpsetAdapter.cpp), with the same names and meaning as in ONNX.
constexpr const char *kCompatDomain = "ai.onnx.otc";
/// Constants beyond this many elements are parameters or bugs, not shapes.
constexpr int64_t kMaxFoldedElements = 1 << 16;

/// A compile-time constant: shape computations and small literal tensors.
struct Const {
  SmallVector<int64_t> shape;
  bool isFloat = false;
  bool isBool = false; // integer values that are booleans (0 or 1)
  /// The ONNX element type the values came with (TensorProto.DataType), or
  /// 0 for the default a folded value takes: float, int64 or bool.
  int dtype = 0;
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
inline bool isConfigOperand(StringRef opType, int index) {
  if (index == 0)
    return opType == "ConstantOfShape" || opType == "Range";
  static const llvm::StringMap<int> firstConfig = {
      {"Dropout", 1},
      {"Reshape", 1},
      {"Unsqueeze", 1},
      {"Squeeze", 1},
      {"Clip", 1},
      {"Pad", 1},
      {"Slice", 1},
      {"Resize", 1},
      {"TopK", 1},
      {"Tile", 1},
      {"Expand", 1},
      {"Split", 1},
      {"ReduceSum", 1},
      {"OneHot", 1},
      {"CumSum", 1},
      {"Trilu", 1},
      {"Range", 0},
      {"LSTM", 4},
      {"GRU", 4},
      {"RNN", 4},
      {"RotaryEmbedding", 1},
      {"Attention", 3},
      {"QuantizeLinear", 1},
      {"DequantizeLinear", 1},
      {"QLinearMatMul", 1},
      {"QLinearConv", 1},
  };
  auto it = firstConfig.find(opType);
  return it != firstConfig.end() && index >= it->second;
}
/// A float32 constant of `shape` with every element `v` (a scalar for {}).
inline Value f32Splat(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                      float v) {
  auto type = RankedTensorType::get(shape, b.getF32Type());
  return b.create<graph::ConstantOp>(loc, DenseElementsAttr::get(type, v));
}

/// The ranked tensor type of an importer value.
inline mlir::RankedTensorType typeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

/// Tensors above this many elements (64 GiB of floats) are refused: every
/// count below it fits int64_t with room for byte offsets.
constexpr int64_t kMaxElements = int64_t(1) << 34;

/// The element count of a shape that checkedElements accepts (every value
/// the importer defines has one): never overflows then, nor does the count
/// of any part of such a shape.
inline int64_t numElements(ArrayRef<int64_t> shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

/// The element count of `shape`, or failure when a dimension is negative or
/// the product of its non-zero dimensions exceeds kMaxElements (checked, so
/// it never overflows; an empty [0, 2^62] fails too, so that the count of
/// every part of an accepted shape stays within kMaxElements).
inline FailureOr<int64_t> checkedElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0)
      return failure();
    if (d == 0)
      empty = true;
    else if (llvm::MulOverflow(n, d, n) || n > kMaxElements)
      return failure();
  }
  return empty ? 0 : n;
}

/// Shape arithmetic on values a model gives (attributes, constant inputs):
/// int64 operations that remember an overflow instead of wrapping, checked
/// once with ok() when the result is known.
class CheckedMath {
public:
  int64_t add(int64_t a, int64_t b) {
    int64_t r;
    bool o = llvm::AddOverflow(a, b, r);
    return result(o, r);
  }
  int64_t sub(int64_t a, int64_t b) {
    int64_t r;
    bool o = llvm::SubOverflow(a, b, r);
    return result(o, r);
  }
  int64_t mul(int64_t a, int64_t b) {
    int64_t r;
    bool o = llvm::MulOverflow(a, b, r);
    return result(o, r);
  }
  bool ok() const { return !overflow; }

private:
  /// 0 after an overflow, so that what follows stays defined.
  int64_t result(bool overflowed, int64_t r) {
    overflow |= overflowed;
    return overflowed ? 0 : r;
  }
  bool overflow = false;
};

/// The int64 a folded float value converts to, or failure when it is NaN
/// or outside int64's range (where C++'s conversion is undefined).
inline FailureOr<int64_t> toInt64(double v) {
  // 2^63 is the first double above INT64_MAX; -2^63 is INT64_MIN.
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
    return failure();
  return static_cast<int64_t>(v);
}

/// `v` as int64, saturated at int64's ends (NaN: 0) where C++'s conversion
/// would be undefined.
inline int64_t saturateToInt64(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9223372036854775808.0)
    return INT64_MAX;
  if (v < -9223372036854775808.0)
    return INT64_MIN;
  return static_cast<int64_t>(v);
}

/// Imports one ModelProto. Op handlers (one per ONNX operator family, in
/// compiler/import/*Ops.cpp) use the helpers below; all members are public
/// to them.
class Importer {
public:
  Importer(MLIRContext *ctx, StringRef path, const ImportOptions &options)
      : ctx(ctx), b(ctx), path(path.str()), options(options) {}

  OwningOpRef<ModuleOp> run(StringRef bytes);

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
  LogicalResult loadExternalData(onnx::ModelProto &model);
  LogicalResult inlineFunctions(onnx::ModelProto &model);
  LogicalResult adaptNewerOpset(onnx::ModelProto &model);
  LogicalResult splitSequencesToSlices(onnx::GraphProto &graph);
  static bool hasHandler(StringRef opType);
  LogicalResult importGraph(const onnx::GraphProto &graph, ModuleOp module);
  FailureOr<RankedTensorType> inputType(const onnx::ValueInfoProto &info);
  LogicalResult importNode(const onnx::NodeProto &node);

  // Op handlers, by family (the table in OnnxImporter.cpp maps op types).
  using OpHandler = LogicalResult (Importer::*)(const onnx::NodeProto &);
  LogicalResult importInFloat32(const onnx::NodeProto &node, OpHandler handler);
  // ShapeOps.cpp
  LogicalResult importConstant(const onnx::NodeProto &node);
  LogicalResult importIdentity(const onnx::NodeProto &node);
  LogicalResult importDropout(const onnx::NodeProto &node);
  LogicalResult importShape(const onnx::NodeProto &node);
  LogicalResult importFoldable(const onnx::NodeProto &node);
  LogicalResult importReshape(const onnx::NodeProto &node);
  LogicalResult importFlatten(const onnx::NodeProto &node);
  // ElementwiseOps.cpp
  LogicalResult importArithmetic(const onnx::NodeProto &node);
  LogicalResult importUnary(const onnx::NodeProto &node);
  LogicalResult importSoftmax(const onnx::NodeProto &node);
  LogicalResult importVariadic(const onnx::NodeProto &node);
  LogicalResult importPow(const onnx::NodeProto &node, Value base,
                          Value exponent);
  LogicalResult importCompare(const onnx::NodeProto &node);
  LogicalResult importNot(const onnx::NodeProto &node);
  LogicalResult importWhere(const onnx::NodeProto &node);
  LogicalResult importBitShift(const onnx::NodeProto &node);
  LogicalResult importIntegerClip(const onnx::NodeProto &node, Value x);
  FailureOr<Type> commonElementType(const onnx::NodeProto &node,
                                    ArrayRef<Value> vs);
  LogicalResult checkBroadcastable(const onnx::NodeProto &node,
                                   ArrayRef<Value> vs);
  void matchIntegerConstants(Value &l, Value &r);
  Value createBinary(StringRef op, Location loc, Value l, Value r);
  // TensorOps.cpp
  LogicalResult importReduce(const onnx::NodeProto &node);
  LogicalResult importArgReduce(const onnx::NodeProto &node);
  LogicalResult importCumSum(const onnx::NodeProto &node);
  LogicalResult importTopK(const onnx::NodeProto &node);
  LogicalResult importSlice(const onnx::NodeProto &node);
  LogicalResult importConcat(const onnx::NodeProto &node);
  LogicalResult importSplit(const onnx::NodeProto &node);
  LogicalResult importExpand(const onnx::NodeProto &node);
  LogicalResult importTile(const onnx::NodeProto &node);
  LogicalResult importPad(const onnx::NodeProto &node);
  LogicalResult importGather(const onnx::NodeProto &node);
  LogicalResult importGatherElements(const onnx::NodeProto &node);
  LogicalResult importScatterElements(const onnx::NodeProto &node);
  LogicalResult importOneHot(const onnx::NodeProto &node);
  LogicalResult importTrilu(const onnx::NodeProto &node);
  LogicalResult importResize(const onnx::NodeProto &node);
  LogicalResult importDepthToSpace(const onnx::NodeProto &node);
  LogicalResult importShapeOf(const onnx::NodeProto &node);
  FailureOr<SmallVector<int64_t>> intsInput(const onnx::NodeProto &node, int i,
                                            ArrayRef<int64_t> dflt);
  FailureOr<int64_t> axisAttr(const onnx::NodeProto &node, int64_t dflt,
                              int64_t rank);
  SmallVector<int64_t> intsAttr(const onnx::NodeProto &node, StringRef name,
                                ArrayRef<int64_t> dflt);
  FailureOr<Value> floatTensor(const onnx::NodeProto &node, int i);
  FailureOr<Value> indexTensor(const onnx::NodeProto &node, int i);
  Value createSlice(Location loc, Value x, ArrayRef<int64_t> starts,
                    ArrayRef<int64_t> steps, ArrayRef<int64_t> shape);
  // NNOps.cpp
  LogicalResult importConv(const onnx::NodeProto &node);
  LogicalResult importPool(const onnx::NodeProto &node);
  LogicalResult importGlobalPool(const onnx::NodeProto &node);
  LogicalResult importBatchNorm(const onnx::NodeProto &node);
  LogicalResult importLayerNorm(const onnx::NodeProto &node);
  LogicalResult importInstanceNorm(const onnx::NodeProto &node);
  // AttentionOps.cpp
  LogicalResult importGroupNorm(const onnx::NodeProto &node);
  LogicalResult importRMSNorm(const onnx::NodeProto &node);
  LogicalResult importRotaryEmbedding(const onnx::NodeProto &node);
  LogicalResult importAttention(const onnx::NodeProto &node);
  // RecurrentOps.cpp
  LogicalResult importRecurrent(const onnx::NodeProto &node);
  // LossOps.cpp
  LogicalResult importLoss(const onnx::NodeProto &node);
  FailureOr<Value> nllLoss(const onnx::NodeProto &node, Value logp,
                           Value target, Value weight);
  // CompositeOps.cpp
  LogicalResult importIsInfNaN(const onnx::NodeProto &node);
  LogicalResult importHardmax(const onnx::NodeProto &node);
  LogicalResult importEyeLike(const onnx::NodeProto &node);
  LogicalResult importCompress(const onnx::NodeProto &node);
  LogicalResult importReverseSequence(const onnx::NodeProto &node);
  LogicalResult importGatherND(const onnx::NodeProto &node);
  LogicalResult importScatterND(const onnx::NodeProto &node);
  LogicalResult importMeanVarianceNorm(const onnx::NodeProto &node);
  LogicalResult importLRN(const onnx::NodeProto &node);
  LogicalResult importMaxUnpool(const onnx::NodeProto &node);
  LogicalResult importQuantize(const onnx::NodeProto &node);
  LogicalResult importDet(const onnx::NodeProto &node);
  LogicalResult importWindow(const onnx::NodeProto &node);
  LogicalResult importDynamicQuantize(const onnx::NodeProto &node);
  LogicalResult importQuantizedLinear(const onnx::NodeProto &node);
  LogicalResult importCubicResize(const onnx::NodeProto &node, Value x,
                                  ArrayRef<int64_t> shape,
                                  ArrayRef<float> scales, StringRef coord);
  // MovementOps.cpp
  LogicalResult importTranspose(const onnx::NodeProto &node);
  // LinalgOps.cpp
  LogicalResult importGemm(const onnx::NodeProto &node);
  LogicalResult importMatMul(const onnx::NodeProto &node);
  LogicalResult importEinsum(const onnx::NodeProto &node);
  LogicalResult importCastLike(const onnx::NodeProto &node);

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
  /// A graph.constant of `c`, of element type `elt` when given, else of
  /// c.dtype's (or the default's).
  Value materialize(const Const &c, Location loc, Type elt = {});
  /// The MLIR element type of an ONNX TensorProto.DataType, or null when
  /// OTC has none (dialects/graph/ElementTypes.h).
  Type elementType(int onnxType);

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
  /// ModelProto.producer_name: PyTorch-exported BatchNorm keeps PyTorch's
  /// running-variance update (unbiased), ONNX's reference the biased one.
  std::string producer;
  llvm::StringMap<Entry> values;
  int64_t dropoutStreams = 0;
  /// The initializers the producer declares as parameters and buffers
  /// (torch 2.x's exporter records them); none: every float initializer
  /// that carries data is a parameter.
  std::optional<llvm::StringSet<>> declaredState;
};

/// Elementwise fold of two constants with numpy broadcasting; failure when
/// the shapes do not broadcast or the result is too large to fold.
template <typename Fn>
inline FailureOr<Const> foldBinary(const Const &l, const Const &r, Fn fn) {
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
    if (out.isFloat) {
      out.floats.push_back(v);
      continue;
    }
    // Integers pass through double: one beyond int64 saturates (INT64_MAX,
    // the exporters' "to the end", rounds up to 2^63).
    out.ints.push_back(saturateToInt64(v));
  }
  return out;
}

} // namespace otc::importer

#endif // OTC_COMPILER_IMPORT_IMPORTER_H
