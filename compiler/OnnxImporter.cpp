//===- OnnxImporter.cpp - ONNX model to graph dialect ---------------------===//
//
// ModelProto -> (opset adapter for opsets newer than the ONNX library) ->
// ONNX checker -> (version converter for old opsets) -> ONNX shape
// inference -> graph dialect. The checker is not a safety boundary:
// sizes, ranks, attributes and shapes are validated here too. Shape
// computations (Shape/Gather/Unsqueeze/Concat/Constant feeding Reshape) are
// evaluated at import time, so every tensor has a static type.
//
//===----------------------------------------------------------------------===//

#include "compiler/OnnxImporter.h"
#include "compiler/import/Importer.h"

#include "dialects/Attributes.h"
#include "dialects/InitAll.h"
#include "dialects/graph/ElementTypes.h"
#include "dialects/graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <google/protobuf/unknown_field_set.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <numeric>
#include <optional>

using namespace mlir;
using namespace otc;

namespace otc::importer {

/// Initializers stored beside the model (torch.onnx.export(dynamo=True)
/// writes model.onnx.data) are read into the model: the checker, the
/// constants and the parameters' shapes need them. Locations must stay in
/// the model's folder (ONNX's rule); the runtime reads the same files.
LogicalResult Importer::loadExternalData(onnx::ModelProto &model) {
  SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  SmallString<256> realDir;
  for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL)
      continue;
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto &kv : t.external_data()) {
      llvm::StringRef v(kv.value());
      if (kv.key() == "location")
        location = kv.value();
      else if ((kv.key() == "offset" && v.getAsInteger(10, offset)) ||
               (kv.key() == "length" && v.getAsInteger(10, length)))
        return error() << "initializer '" << t.name() << "' has external "
                       << kv.key() << " '" << kv.value() << "', not a number";
    }
    if (location.empty() || llvm::sys::path::is_absolute(location) ||
        llvm::StringRef(location).contains(".."))
      return error() << "initializer '" << t.name()
                     << "' has an external data location '" << location
                     << "' outside the model's folder";
    SmallString<256> file(dir), realFile;
    llvm::sys::path::append(file, location);
    if (llvm::sys::fs::real_path(dir, realDir) ||
        llvm::sys::fs::real_path(file, realFile))
      return error() << "cannot open external data '" << file
                     << "' of initializer '" << t.name() << "'";
    if (!llvm::StringRef(realFile).starts_with(realDir.str().str() + "/"))
      return error() << "initializer '" << t.name() << "' has external data '"
                     << location << "' that resolves outside the model's "
                     << "folder";
    auto buf = llvm::MemoryBuffer::getFile(realFile, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!buf)
      return error() << "cannot read external data '" << file
                     << "': " << buf.getError().message();
    int64_t size = (*buf)->getBufferSize();
    if (length < 0)
      length = size - offset;
    if (offset < 0 || length < 0 || offset > size || length > size - offset)
      return error() << "external data of initializer '" << t.name()
                     << "' (offset " << offset << ", " << length
                     << " bytes) lies outside '" << file << "' (" << size
                     << " bytes)";
    t.set_raw_data((*buf)->getBufferStart() + offset, length);
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
  }
  return success();
}

/// The names torch 2.x's exporter declares as the model's state: the
/// PARAMETER and BUFFER targets of the torch.export graph signature it
/// records in GraphProto.metadata_props (ONNX 1.16, field 16, which the ONNX
/// library OTC links does not know, so it is read from the unknown fields).
/// None when the model carries no signature.
static std::optional<llvm::StringSet<>>
torchStateNames(const onnx::GraphProto &graph) {
  constexpr int kGraphMetadataProps = 16;
  const auto &unknown = graph.GetReflection()->GetUnknownFields(graph);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField &f = unknown.field(i);
    onnx::StringStringEntryProto entry;
    if (f.number() != kGraphMetadataProps ||
        f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED ||
        !entry.ParseFromString(f.length_delimited()) ||
        entry.key() != "pkg.torch.export.ExportedProgram.graph_signature")
      continue;
    // Lines such as "p_fc_weight: PARAMETER target='fc.weight'".
    llvm::StringSet<> names;
    SmallVector<StringRef> lines;
    StringRef(entry.value()).split(lines, '\n');
    for (StringRef line : lines) {
      if (!line.contains(": PARAMETER ") && !line.contains(": BUFFER "))
        continue;
      size_t at = line.find("target='");
      if (at != StringRef::npos)
        names.insert(line.drop_front(at + 8).take_until(
            [](char c) { return c == '\''; }));
    }
    return names;
  }
  return std::nullopt;
}

LogicalResult Importer::prepare(onnx::ModelProto &model) {
  if (failed(loadExternalData(model)))
    return failure();
  declaredState = torchStateNames(model.graph());
  opset = 0;
  producer = model.producer_name();
  for (const auto &imp : model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx")
      opset = imp.version();
  if (opset == 0)
    return error() << "model imports no default-domain (ai.onnx) opset";
  if (opset > kMaxOpset)
    return error() << "opset " << opset << " is not supported (OTC supports "
                   << kMinOpset << " to " << kMaxOpset << ")";
  if (failed(inlineFunctions(model)))
    return failure();
  if (opset > kLibraryOpset && failed(adaptNewerOpset(model)))
    return failure();
  // ONNX's checker lets a graph output that nothing defines pass, and its
  // version converter then follows a null pointer (found by fuzzing).
  llvm::StringSet<> defined;
  for (const auto &in : model.graph().input())
    defined.insert(in.name());
  for (const auto &init : model.graph().initializer())
    defined.insert(init.name());
  for (const auto &node : model.graph().node())
    for (const std::string &out : node.output())
      defined.insert(out);
  for (const auto &out : model.graph().output())
    if (out.name().empty() || !defined.contains(out.name()))
      return error() << "graph output '" << out.name() << "' is never defined";
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
  Type elt = elementType(tt.elem_type());
  if (!elt)
    return error() << "input '" << info.name() << "' has element type "
                   << onnx::TensorProto::DataType_Name(
                          static_cast<onnx::TensorProto::DataType>(
                              tt.elem_type()))
                   << "; OTC supports float, double, float16, bfloat16, "
                      "bool and 8- to 64-bit signed and unsigned integer "
                      "inputs";
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

Type Importer::elementType(int onnxType) {
  const ElementTypeInfo *e = elementTypeInfo(onnxType);
  return e ? e->get(ctx) : Type();
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
  // The narrow integers sit in int32_data, the wide unsigned ones in
  // uint64_data (UINT64 values above INT64_MAX keep their bits).
  case onnx::TensorProto::INT8:
    if (failed(read(int8_t(), t.int32_data(), c.ints)))
      return failure();
    break;
  case onnx::TensorProto::UINT8:
    if (failed(read(uint8_t(), t.int32_data(), c.ints)))
      return failure();
    break;
  case onnx::TensorProto::INT16:
    if (failed(read(int16_t(), t.int32_data(), c.ints)))
      return failure();
    break;
  case onnx::TensorProto::UINT16:
    if (failed(read(uint16_t(), t.int32_data(), c.ints)))
      return failure();
    break;
  case onnx::TensorProto::UINT32:
    if (failed(read(uint32_t(), t.uint64_data(), c.ints)))
      return failure();
    break;
  case onnx::TensorProto::UINT64:
    if (failed(read(uint64_t(), t.uint64_data(), c.ints)))
      return failure();
    break;
  case onnx::TensorProto::BOOL:
    c.isBool = true;
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
  c.dtype = t.data_type();
  return c;
}

Value Importer::materialize(const Const &c, Location loc, Type elt) {
  if (!elt && c.dtype)
    elt = elementType(c.dtype);
  if (!elt)
    elt = c.isFloat  ? Type(b.getF32Type())
          : c.isBool ? Type(b.getI1Type())
                     : Type(b.getI64Type());
  auto type = RankedTensorType::get(c.shape, elt);
  if (auto ft = llvm::dyn_cast<FloatType>(elt)) {
    SmallVector<APFloat> v;
    for (int64_t i = 0; i < c.size(); ++i) {
      APFloat f(c.at(i));
      bool lost;
      f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      v.push_back(f);
    }
    return b.create<graph::ConstantOp>(loc, DenseElementsAttr::get(type, v));
  }
  if (elt.isInteger(1)) {
    SmallVector<bool> v;
    for (int64_t i = 0; i < c.size(); ++i)
      v.push_back(c.at(i) != 0);
    return b.create<graph::ConstantOp>(
        loc, DenseElementsAttr::get(type, ArrayRef<bool>(v)));
  }
  // Integers keep their low bits (numpy's astype).
  unsigned width = elt.getIntOrFloatBitWidth();
  SmallVector<APInt> v;
  for (int64_t i = 0; i < c.size(); ++i) {
    int64_t x = c.isFloat ? saturateToInt64(c.floats[i]) : c.ints[i];
    v.push_back(APInt(64, static_cast<uint64_t>(x)).trunc(width));
  }
  return b.create<graph::ConstantOp>(loc, DenseElementsAttr::get(type, v));
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
  if (!(*e)->value)
    (*e)->value = materialize(*(*e)->folded, nodeLoc(node));
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

static const llvm::StringMap<Importer::OpHandler> &opHandlers() {
  static const llvm::StringMap<Importer::OpHandler> handlers = {
      {"Constant", &Importer::importConstant},
      {"Identity", &Importer::importIdentity},
      {"Dropout", &Importer::importDropout},
      {"Shape", &Importer::importShape},
      {"Gather", &Importer::importFoldable},
      {"Unsqueeze", &Importer::importFoldable},
      {"Squeeze", &Importer::importFoldable},
      {"Concat", &Importer::importFoldable},
      {"Cast", &Importer::importFoldable},
      {"Reshape", &Importer::importReshape},
      {"Flatten", &Importer::importFlatten},
      {"Add", &Importer::importArithmetic},
      {"Sub", &Importer::importArithmetic},
      {"Mul", &Importer::importArithmetic},
      {"Div", &Importer::importArithmetic},
      {"Pow", &Importer::importArithmetic},
      {"PRelu", &Importer::importArithmetic},
      {"Mod", &Importer::importArithmetic},
      {"Sum", &Importer::importVariadic},
      {"Mean", &Importer::importVariadic},
      {"Max", &Importer::importVariadic},
      {"Min", &Importer::importVariadic},
      {"Equal", &Importer::importCompare},
      {"Less", &Importer::importCompare},
      {"LessOrEqual", &Importer::importCompare},
      {"Greater", &Importer::importCompare},
      {"GreaterOrEqual", &Importer::importCompare},
      {"And", &Importer::importCompare},
      {"Or", &Importer::importCompare},
      {"Xor", &Importer::importCompare},
      {"Not", &Importer::importNot},
      {"BitShift", &Importer::importBitShift},
      {"Where", &Importer::importWhere},
      {"ReduceSum", &Importer::importReduce},
      {"ReduceMean", &Importer::importReduce},
      {"ReduceMax", &Importer::importReduce},
      {"ReduceMin", &Importer::importReduce},
      {"ReduceProd", &Importer::importReduce},
      {"ReduceSumSquare", &Importer::importReduce},
      {"ReduceL1", &Importer::importReduce},
      {"ReduceL2", &Importer::importReduce},
      {"ReduceLogSumExp", &Importer::importReduce},
      {"ReduceLogSum", &Importer::importReduce},
      {"ArgMax", &Importer::importArgReduce},
      {"ArgMin", &Importer::importArgReduce},
      {"CumSum", &Importer::importCumSum},
      {"TopK", &Importer::importTopK},
      {"Slice", &Importer::importSlice},
      {"Split", &Importer::importSplit},
      {"Expand", &Importer::importExpand},
      {"Tile", &Importer::importTile},
      {"Pad", &Importer::importPad},
      {"GatherElements", &Importer::importGatherElements},
      {"ScatterElements", &Importer::importScatterElements},
      {"OneHot", &Importer::importOneHot},
      {"IsInf", &Importer::importIsInfNaN},
      {"IsNaN", &Importer::importIsInfNaN},
      {"Hardmax", &Importer::importHardmax},
      {"EyeLike", &Importer::importEyeLike},
      {"QuantizeLinear", &Importer::importQuantize},
      {"Det", &Importer::importDet},
      {"MatMulInteger", &Importer::importQuantizedLinear},
      {"ConvInteger", &Importer::importQuantizedLinear},
      {"QLinearMatMul", &Importer::importQuantizedLinear},
      {"QLinearConv", &Importer::importQuantizedLinear},
      {"DynamicQuantizeLinear", &Importer::importDynamicQuantize},
      {"HannWindow", &Importer::importWindow},
      {"HammingWindow", &Importer::importWindow},
      {"BlackmanWindow", &Importer::importWindow},
      {"DequantizeLinear", &Importer::importQuantize},
      {"Compress", &Importer::importCompress},
      {"ReverseSequence", &Importer::importReverseSequence},
      {"GatherND", &Importer::importGatherND},
      {"ScatterND", &Importer::importScatterND},
      {"MeanVarianceNormalization", &Importer::importMeanVarianceNorm},
      {"LRN", &Importer::importLRN},
      {"MaxUnpool", &Importer::importMaxUnpool},
      {"Trilu", &Importer::importTrilu},
      {"Resize", &Importer::importResize},
      {"DepthToSpace", &Importer::importDepthToSpace},
      {"SpaceToDepth", &Importer::importDepthToSpace},
      {"Size", &Importer::importShapeOf},
      {"ConstantOfShape", &Importer::importShapeOf},
      {"Range", &Importer::importShapeOf},
      {"Conv", &Importer::importConv},
      {"ConvTranspose", &Importer::importConv},
      {"MaxPool", &Importer::importPool},
      {"AveragePool", &Importer::importPool},
      {"GlobalAveragePool", &Importer::importGlobalPool},
      {"GlobalMaxPool", &Importer::importGlobalPool},
      {"BatchNormalization", &Importer::importBatchNorm},
      {"LayerNormalization", &Importer::importLayerNorm},
      {"InstanceNormalization", &Importer::importInstanceNorm},
      {"GroupNormalization", &Importer::importGroupNorm},
      {"RMSNormalization", &Importer::importRMSNorm},
      {"RotaryEmbedding", &Importer::importRotaryEmbedding},
      {"Attention", &Importer::importAttention},
      {"LSTM", &Importer::importRecurrent},
      {"GRU", &Importer::importRecurrent},
      {"RNN", &Importer::importRecurrent},
      {"Einsum", &Importer::importEinsum},
      {"NegativeLogLikelihoodLoss", &Importer::importLoss},
      {"SoftmaxCrossEntropyLoss", &Importer::importLoss},
      {"CastLike", &Importer::importCastLike},
      {"Relu", &Importer::importUnary},
      {"Sigmoid", &Importer::importUnary},
      {"Tanh", &Importer::importUnary},
      {"Neg", &Importer::importUnary},
      {"Exp", &Importer::importUnary},
      {"Log", &Importer::importUnary},
      {"Sqrt", &Importer::importUnary},
      {"Abs", &Importer::importUnary},
      {"Reciprocal", &Importer::importUnary},
      {"Sin", &Importer::importUnary},
      {"Cos", &Importer::importUnary},
      {"Erf", &Importer::importUnary},
      {"Tan", &Importer::importUnary},
      {"Asin", &Importer::importUnary},
      {"Acos", &Importer::importUnary},
      {"Atan", &Importer::importUnary},
      {"Sinh", &Importer::importUnary},
      {"Cosh", &Importer::importUnary},
      {"Asinh", &Importer::importUnary},
      {"Acosh", &Importer::importUnary},
      {"Atanh", &Importer::importUnary},
      {"ThresholdedRelu", &Importer::importUnary},
      {"Shrink", &Importer::importUnary},
      {"Sign", &Importer::importUnary},
      {"Floor", &Importer::importUnary},
      {"Ceil", &Importer::importUnary},
      {"Round", &Importer::importUnary},
      {"Softplus", &Importer::importUnary},
      {"Softsign", &Importer::importUnary},
      {"HardSwish", &Importer::importUnary},
      {"LeakyRelu", &Importer::importUnary},
      {"Elu", &Importer::importUnary},
      {"Celu", &Importer::importUnary},
      {"Selu", &Importer::importUnary},
      {"HardSigmoid", &Importer::importUnary},
      {"Clip", &Importer::importUnary},
      {"Gelu", &Importer::importUnary},
      {"Mish", &Importer::importUnary},
      {"Softmax", &Importer::importSoftmax},
      {"LogSoftmax", &Importer::importSoftmax},
      {"Transpose", &Importer::importTranspose},
      {"Gemm", &Importer::importGemm},
      {"MatMul", &Importer::importMatMul},
  };
  return handlers;
}

bool Importer::hasHandler(StringRef opType) {
  return opHandlers().count(opType) != 0;
}

LogicalResult Importer::importNode(const onnx::NodeProto &node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx" &&
      node.domain() != kCompatDomain)
    return nodeError(node) << "unsupported operator domain '" << node.domain()
                           << "'";
  auto it = opHandlers().find(node.op_type());
  if (it == opHandlers().end())
    return nodeError(node) << "unsupported operator " << node.op_type();
  if (failed(importInFloat32(node, it->second)))
    return failure();
  // Handlers compute result shapes from the model's numbers (pads, sizes,
  // repeats, ...); what comes next multiplies them. A shape beyond
  // kMaxElements stops here, before any count of it can overflow.
  for (const std::string &name : node.output()) {
    auto v = values.find(name);
    if (v == values.end())
      continue;
    ArrayRef<int64_t> shape = v->second.value
                                  ? typeOf(v->second.value).getShape()
                                  : ArrayRef<int64_t>(v->second.folded->shape);
    if (failed(checkedElements(shape)))
      return nodeError(node)
             << "output '" << name << "' would have shape [" << shape
             << "], more than " << kMaxElements << " elements";
  }
  return success();
}

/// Operators whose kernels compute in float32 only and that take float64
/// and float16 data by computing in float32: the data inputs (the first
/// `count`, -1 for all) are cast to float32 and the results back. float16
/// goes through float32 exactly (Mod's result is then exact, the others
/// round once, as float16 arithmetic does); float64 results carry float32's
/// rounding (about 1e-7 relative), which is what these operators get here
/// until float64 kernels exist. ONNX's conformance data for them (random
/// values of moderate size, tolerance 1e-4 relative) is met. MaxPool, which
/// only selects, also takes 8- and 16-bit integers (exact in float32).
static int float32DataInputs(StringRef opType) {
  return llvm::StringSwitch<int>(opType)
      .Case("ReduceLogSumExp", 1)
      .Case("CumSum", 1)
      .Case("Einsum", -1)
      .Case("Mod", 2)
      .Case("MaxPool", 1)
      .Default(0);
}

static bool computedInFloat32(StringRef opType, Type t) {
  if (t.isF64() || t.isF16())
    return true;
  return opType == "MaxPool" && isIntegerElement(t) &&
         t.getIntOrFloatBitWidth() <= 16;
}

LogicalResult Importer::importInFloat32(const onnx::NodeProto &node,
                                        OpHandler handler) {
  int count = float32DataInputs(node.op_type());
  if (count < 0)
    count = node.input_size();
  onnx::NodeProto narrowed = node;
  Location loc = nodeLoc(node);
  Type wide;
  for (int i = 0; i < std::min(count, node.input_size()); ++i) {
    auto it = values.find(node.input(i));
    if (!hasInput(node, i) || it == values.end() || !it->second.value)
      continue;
    Value v = it->second.value;
    Type t = typeOf(v).getElementType();
    if (!computedInFloat32(node.op_type(), t))
      continue;
    wide = t;
    std::string name = node.input(i) + " (as float32)";
    values[name] =
        Entry{b.create<graph::CastOp>(loc, typeOf(v).clone(b.getF32Type()), v),
              std::nullopt};
    narrowed.set_input(i, name);
  }
  if (!wide)
    return (this->*handler)(node);
  if (failed((this->*handler)(narrowed)))
    return failure();
  for (int k = 0; k < node.output_size(); ++k) {
    auto it = values.find(node.output(k));
    if (it == values.end() || !it->second.value ||
        !typeOf(it->second.value).getElementType().isF32())
      continue;
    Value y = it->second.value;
    define(node, k, b.create<graph::CastOp>(loc, typeOf(y).clone(wide), y));
  }
  return success();
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
  // A forward program without inputs computes its outputs from constants
  // and parameters; a training step batches its inputs, so needs one.
  if (argTypes.empty() && options.batchedInputs)
    return error() << "the model has no inputs; a training program needs at "
                      "least one batched input (compile it with --inference "
                      "to evaluate it)";
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
  // The exporter's optimizer may fold a parameter into a new initializer
  // (a transposed weight) that the signature does not name: then only
  // single-element undeclared initializers (epsilons, literals) are
  // constants, the others may be parameters and are trained.
  bool stateComplete = true;
  if (declaredState) {
    llvm::StringSet<> present;
    for (const auto &init : graph.initializer())
      present.insert(init.name());
    int64_t folded = 0;
    for (const auto &name : *declaredState)
      folded += !present.contains(name.getKey());
    stateComplete = folded == 0;
    if (!stateComplete && options.batchedInputs)
      emitWarning(fileLoc())
          << folded << " parameters the exporter declares are not "
          << "initializers (its optimizer folded them into others): every "
          << "float initializer of more than one element is trained; export "
          << "with optimize=False to keep the model's own parameters";
  }
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
      // A float initializer the exporter does not declare as the model's
      // state is a constant (an epsilon, a Pow exponent, a folded
      // table): a value the step reads, never trains.
      SmallVector<NamedAttribute> attrs{
          b.getNamedAttr(attr::kParam, b.getStringAttr(init.name()))};
      if (declaredState && !declaredState->contains(init.name()) &&
          (stateComplete || numElements(shape) == 1))
        attrs.push_back(b.getNamedAttr(attr::kBuffer, b.getUnitAttr()));
      argAttrs.push_back(b.getDictionaryAttr(attrs));
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
  // Running statistics of training-mode BatchNorm are buffers: updated by
  // the forward, not by the optimizer.
  // Those of inference-mode BatchNorm are buffers that stay as they are
  // (as torch's buffers of a module in eval mode), not trained parameters.
  auto markBuffers = [&](ValueRange stats) {
    for (Value stat : stats)
      if (auto arg = llvm::dyn_cast<BlockArgument>(stat))
        if (fn.getArgAttr(arg.getArgNumber(), attr::kParam))
          fn.setArgAttr(arg.getArgNumber(), attr::kBuffer, b.getUnitAttr());
  };
  fn.walk([&](graph::BatchNormOp bn) {
    markBuffers({bn.getRunningMean(), bn.getRunningVar()});
  });
  int64_t frozenNorms = 0;
  fn.walk([&](graph::BatchNormInferenceOp bn) {
    markBuffers({bn.getMean(), bn.getVar()});
    ++frozenNorms;
  });
  if (frozenNorms && options.batchedInputs)
    emitWarning(fileLoc())
        << frozenNorms
        << " BatchNormalization nodes are in inference mode: they normalize "
           "with their running statistics, which stay fixed; "
           "--train-batchnorm trains them as torch's module.train() does "
           "(batch statistics, running statistics updated)";

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const auto &out : graph.output()) {
    auto it = values.find(out.name());
    if (it == values.end())
      return error() << "graph output '" << out.name() << "' is never defined";
    Value v = it->second.value;
    if (!v) {
      // A constant output is computed at compile time and copied into the
      // output buffer; it takes the element type the graph declares.
      Type elt;
      if (out.type().has_tensor_type() &&
          out.type().tensor_type().elem_type() != 0) {
        int code = out.type().tensor_type().elem_type();
        elt = elementType(code);
        if (!elt)
          return error() << "graph output '" << out.name()
                         << "' is a constant of element type "
                         << onnx::TensorProto::DataType_Name(
                                static_cast<onnx::TensorProto::DataType>(code))
                         << ", which OTC does not support";
      }
      v = materialize(*it->second.folded, fileLoc(), elt);
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

} // namespace otc::importer

using otc::importer::Importer;

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
