//===- OpsetAdapter.cpp - opsets 18 to 20 in the ONNX library's terms -----===//
//
// The ONNX library OTC links (1.12) knows opsets up to 17: its checker and
// shape inference reject anything newer. A model of opset 18-20 is rewritten
// into opset-17 form first. An operator whose schema changed keeps its
// meaning in the older form (Reduce* axes input -> attribute, Cast's
// saturate dropped, default-valued new attributes dropped) or is refused
// with a diagnostic where it would not; Gelu (20), Mish (18) and Split by
// num_outputs (18: the last part may be smaller), which have no opset-17
// form, move to OTC's own domain, whose schemas are registered with the
// library once. Operators new in 18-20 that
// OTC does not import are reported here, before the checker would call them
// unknown. Diagnostics keep naming the model's own opset.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/Importer.h"

#include "llvm/ADT/StringSwitch.h"

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>
#include <onnx/defs/tensor_proto_util.h>

#include <deque>
#include <mutex>

namespace otc::importer {

namespace {

constexpr int64_t kLibraryIrVersion = 8;
// Where ONNX's messages say a schema was defined: this file, not the folder
// it was built in (an install names neither tree).
constexpr char kSchemaFile[] = "compiler/import/OpsetAdapter.cpp";

void registerCompatSchemas() {
  static std::once_flag once;
  std::call_once(once, [] {
    onnx::OpSchemaRegistry::DomainToVersionRange::Instance().AddDomainToVersion(
        kCompatDomain, 1, 1);
    auto define = [](const char *name, const char *doc) {
      onnx::OpSchema s(name, kSchemaFile, __LINE__);
      s.SetDomain(kCompatDomain)
          .SinceVersion(1)
          .SetDoc(doc)
          .Input(0, "X", "input", "T")
          .Output(0, "Y", "output", "T")
          .TypeConstraint("T",
                          {"tensor(float)", "tensor(double)", "tensor(float16)",
                           "tensor(bfloat16)"},
                          "float tensors")
          .TypeAndShapeInferenceFunction(
              onnx::propagateShapeAndTypeFromFirstInput);
      if (llvm::StringRef(name) == "Gelu")
        s.Attr("approximate", "none or tanh", onnx::AttributeProto::STRING,
               std::string("none"));
      onnx::OpSchemaRegistry::OpSchemaRegisterOnce reg(s);
    };
    define("Gelu", "ONNX Gelu (opset 20)");
    define("Mish", "ONNX Mish (opset 18)");
    // Normalizations and rotary embeddings of opsets 18-23: the output has
    // the shape of the first input; the importer checks the rest.
    auto defineLike = [](const char *name, const char *doc, int minIn,
                         int maxIn) {
      onnx::OpSchema s(name, kSchemaFile, __LINE__);
      s.SetDomain(kCompatDomain)
          .SinceVersion(1)
          .SetDoc(doc)
          .AllowUncheckedAttributes()
          .Input(0, "X", "input", "T")
          .Output(0, "Y", "output", "T")
          .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor")
          .TypeAndShapeInferenceFunction(
              onnx::propagateShapeAndTypeFromFirstInput);
      for (int i = 1; i < maxIn; ++i)
        s.Input(i, "in" + std::to_string(i), "operand", "T" + std::to_string(i),
                i < minIn ? onnx::OpSchema::Single : onnx::OpSchema::Optional)
            .TypeConstraint("T" + std::to_string(i),
                            onnx::OpSchema::all_tensor_types(), "any tensor");
      onnx::OpSchemaRegistry::OpSchemaRegisterOnce reg(s);
    };
    defineLike("GroupNormalization", "ONNX GroupNormalization (18, 21)", 3, 3);
    defineLike("RMSNormalization", "ONNX RMSNormalization (23)", 2, 2);
    defineLike("RotaryEmbedding", "ONNX RotaryEmbedding (23)", 3, 4);

    // Attention (23): Y, and the present key and value; the shapes are the
    // importer's to work out (GQA, 3-D inputs with head counts).
    onnx::OpSchema attention("Attention", kSchemaFile, __LINE__);
    attention.SetDomain(kCompatDomain)
        .SinceVersion(1)
        .SetDoc("ONNX Attention (opset 23)")
        .AllowUncheckedAttributes()
        .Input(0, "Q", "queries", "T")
        .Input(1, "K", "keys", "T")
        .Input(2, "V", "values", "T")
        .Input(3, "attn_mask", "mask", "M", onnx::OpSchema::Optional)
        .Input(4, "past_key", "cached keys", "T", onnx::OpSchema::Optional)
        .Input(5, "past_value", "cached values", "T", onnx::OpSchema::Optional)
        .Output(0, "Y", "output", "T")
        .Output(1, "present_key", "keys with the cache", "T",
                onnx::OpSchema::Optional)
        .Output(2, "present_value", "values with the cache", "T",
                onnx::OpSchema::Optional)
        .Output(3, "qk_matmul_output", "scores", "T", onnx::OpSchema::Optional)
        .TypeConstraint("T", {"tensor(float)"}, "float tensors")
        .TypeConstraint("M", {"tensor(float)", "tensor(bool)"}, "mask")
        .TypeAndShapeInferenceFunction([](onnx::InferenceContext &ctx) {
          for (size_t i = 0; i < ctx.getNumOutputs(); ++i)
            onnx::propagateElemTypeFromInputToOutput(ctx, 0, i);
        });
    onnx::OpSchemaRegistry::OpSchemaRegisterOnce regAttention(attention);

    // Split-18 by num_outputs: equal parts, the last one smaller (Split-13
    // refuses parts that do not divide the axis).
    onnx::OpSchema split("Split", kSchemaFile, __LINE__);
    split.SetDomain(kCompatDomain)
        .SinceVersion(1)
        .SetDoc("ONNX Split (opset 18) by num_outputs")
        .Input(0, "input", "input", "T")
        .Output(0, "outputs", "outputs", "T", onnx::OpSchema::Variadic)
        .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor")
        .Attr("axis", "split axis", onnx::AttributeProto::INT, int64_t(0))
        .Attr("num_outputs", "number of parts", onnx::AttributeProto::INT)
        .TypeAndShapeInferenceFunction([](onnx::InferenceContext &ctx) {
          size_t n = ctx.getNumOutputs();
          for (size_t i = 0; i < n; ++i)
            onnx::propagateElemTypeFromInputToOutput(ctx, 0, i);
          if (!onnx::hasInputShape(ctx, 0))
            return;
          const onnx::TensorShapeProto &in =
              ctx.getInputType(0)->tensor_type().shape();
          int64_t rank = in.dim_size();
          const onnx::AttributeProto *a = ctx.getAttribute("axis");
          int64_t axis = a ? a->i() : 0;
          if (axis < 0)
            axis += rank;
          if (n == 0 || axis < 0 || axis >= rank ||
              !in.dim(int(axis)).has_dim_value())
            return;
          int64_t dim = in.dim(int(axis)).dim_value();
          // ceil(dim / n), without overflowing for a dimension near 2^63.
          int64_t each = dim <= 0 ? 0 : (dim - 1) / int64_t(n) + 1;
          for (size_t i = 0; i < n; ++i) {
            onnx::TensorShapeProto out = in;
            out.mutable_dim(int(axis))->set_dim_value(
                std::max<int64_t>(0, std::min(each, dim - int64_t(i) * each)));
            *onnx::getOutputShape(ctx, i) = out;
          }
        });
    onnx::OpSchemaRegistry::OpSchemaRegisterOnce reg(split);

    // Pad-18 with its axes input: the output's shape when pads and axes are
    // initializers (the importer checks the rest).
    onnx::OpSchema pad("Pad", kSchemaFile, __LINE__);
    pad.SetDomain(kCompatDomain)
        .SinceVersion(1)
        .SetDoc("ONNX Pad (opset 18) with axes")
        .Input(0, "data", "input", "T")
        .Input(1, "pads", "begins then ends", "tensor(int64)")
        .Input(2, "constant_value", "fill", "T", onnx::OpSchema::Optional)
        .Input(3, "axes", "padded axes", "Tind", onnx::OpSchema::Optional)
        .Output(0, "output", "output", "T")
        .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor")
        .TypeConstraint("Tind", {"tensor(int32)", "tensor(int64)"}, "axes")
        .Attr("mode", "constant, reflect or edge", onnx::AttributeProto::STRING,
              std::string("constant"))
        .TypeAndShapeInferenceFunction([](onnx::InferenceContext &ctx) {
          onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
          const onnx::TensorProto *pads = ctx.getInputData(1);
          const onnx::TensorProto *axes =
              ctx.getNumInputs() > 3 ? ctx.getInputData(3) : nullptr;
          if (!onnx::hasInputShape(ctx, 0) || !pads || !axes)
            return;
          const onnx::TensorShapeProto &in =
              ctx.getInputType(0)->tensor_type().shape();
          int64_t rank = in.dim_size();
          std::vector<int64_t> p = onnx::ParseData<int64_t>(pads), a;
          if (axes->data_type() == onnx::TensorProto::INT32)
            for (int32_t v : onnx::ParseData<int32_t>(axes))
              a.push_back(v);
          else
            a = onnx::ParseData<int64_t>(axes);
          if (p.size() != 2 * a.size())
            return;
          onnx::TensorShapeProto out = in;
          for (size_t i = 0; i < a.size(); ++i) {
            int64_t d = a[i] < 0 ? a[i] + rank : a[i];
            if (d < 0 || d >= rank || !in.dim(int(d)).has_dim_value())
              return;
            // Sizes beyond int64 stay unknown: the importer refuses them.
            CheckedMath m;
            int64_t size = m.add(m.add(out.dim(int(d)).dim_value(), p[i]),
                                 p[a.size() + i]);
            if (!m.ok())
              return;
            out.mutable_dim(int(d))->set_dim_value(size);
          }
          *onnx::getOutputShape(ctx, 0) = out;
        });
    onnx::OpSchemaRegistry::OpSchemaRegisterOnce regPad(pad);
  });
}

bool isReduceWithAxesInput(llvm::StringRef op) {
  return llvm::StringSwitch<bool>(op)
      .Cases("ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", true)
      .Cases("ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", true)
      .Case("ReduceLogSumExp", true)
      .Default(false);
}

/// An int64 tensor named `name`.
onnx::TensorProto intTensor(const std::string &name, ArrayRef<int64_t> dims,
                            ArrayRef<int64_t> values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims)
    t.add_dims(d);
  for (int64_t v : values)
    t.add_int64_data(v);
  return t;
}

void eraseAttr(onnx::NodeProto &node, llvm::StringRef name) {
  auto *attrs = node.mutable_attribute();
  for (int i = 0; i < attrs->size(); ++i)
    if (attrs->Get(i).name() == name) {
      attrs->erase(attrs->begin() + i);
      return;
    }
}

} // namespace

namespace {

/// Integer constants of the graph by value name: initializers, Constant
/// nodes, and the small computations on them that the torch 2.x exporter
/// writes for axes (Reshape, Identity, Cast, Concat, Squeeze, Unsqueeze),
/// folded. Values that are not integer constants are absent.
class ProtoConstants {
public:
  explicit ProtoConstants(const onnx::GraphProto &graph) {
    for (const auto &init : graph.initializer())
      byName[init.name()] = &init;
  }
  const onnx::TensorProto *find(const std::string &name) const {
    auto it = byName.find(name);
    return it == byName.end() ? nullptr : it->second;
  }
  /// Records what `node` defines when its value is known.
  void add(Importer &im, const onnx::NodeProto &node) {
    llvm::StringRef op = node.op_type();
    if (node.output_size() != 1 || node.input_size() < 1)
      return node.output_size() == 1 && op == "Constant" ? addConstant(im, node)
                                                         : void();
    SmallVector<Const> in;
    for (const std::string &name : node.input()) {
      const onnx::TensorProto *t = name.empty() ? nullptr : find(name);
      if (!t || !isSmallIntTensor(*t))
        return;
      FailureOr<Const> c = im.tensorToConst(*t, im.nodeLoc(node));
      if (failed(c) || c->isFloat)
        return;
      in.push_back(std::move(*c));
    }
    SmallVector<int64_t> dims = in[0].shape;
    std::vector<int64_t> values = in[0].ints;
    if (op == "Identity" || op == "Cast") {
      if (op == "Cast" && im.intAttr(node, "to", 0) != onnx::TensorProto::INT64)
        return;
    } else if (op == "Reshape" && in.size() == 2) {
      dims.clear();
      int64_t known = 1, inferred = -1;
      for (auto [i, d] : llvm::enumerate(in[1].ints)) {
        if (d == 0 && i < in[0].shape.size())
          d = in[0].shape[i];
        if (d == -1)
          inferred = i;
        else if (d < 0 || llvm::MulOverflow(known, d, known))
          return;
        dims.push_back(d);
      }
      if (inferred >= 0) {
        if (known == 0 || int64_t(values.size()) % known)
          return;
        dims[inferred] = values.size() / known;
      }
      FailureOr<int64_t> count = checkedElements(dims);
      if (failed(count) || *count != int64_t(values.size()))
        return;
    } else if (op == "Concat") {
      if (dims.size() != 1)
        return;
      for (size_t i = 1; i < in.size(); ++i) {
        if (in[i].shape.size() != 1)
          return;
        values.insert(values.end(), in[i].ints.begin(), in[i].ints.end());
      }
      dims = {int64_t(values.size())};
    } else if ((op == "Unsqueeze" || op == "Squeeze") && values.size() == 1) {
      dims =
          op == "Unsqueeze" ? SmallVector<int64_t>{1} : SmallVector<int64_t>{};
      if (in.size() == 2 && in[1].ints.size() != 1)
        return;
    } else {
      return;
    }
    folded.push_back(intTensor(node.output(0), dims, values));
    byName[node.output(0)] = &folded.back();
  }

private:
  static bool isSmallIntTensor(const onnx::TensorProto &t) {
    if (t.data_type() != onnx::TensorProto::INT64 &&
        t.data_type() != onnx::TensorProto::INT32)
      return false;
    SmallVector<int64_t> dims(t.dims().begin(), t.dims().end());
    FailureOr<int64_t> n = checkedElements(dims);
    return succeeded(n) && *n <= kMaxFoldedElements;
  }
  void addConstant(Importer &im, const onnx::NodeProto &node) {
    if (auto *v = im.attr(node, "value"))
      byName[node.output(0)] = &v->t();
    else if (auto *v = im.attr(node, "value_ints")) {
      folded.push_back(
          intTensor(node.output(0), {int64_t(v->ints_size())},
                    SmallVector<int64_t>(v->ints().begin(), v->ints().end())));
      byName[node.output(0)] = &folded.back();
    } else if (auto *v = im.attr(node, "value_int")) {
      folded.push_back(intTensor(node.output(0), {}, {v->i()}));
      byName[node.output(0)] = &folded.back();
    }
  }

  llvm::StringMap<const onnx::TensorProto *> byName;
  std::deque<onnx::TensorProto> folded; // stable addresses
};

} // namespace

/// torch.chunk as the torch 2.x exporter writes it, SplitToSequence read
/// by SequenceAt at constant positions, becomes one Slice per part read
/// (Slice clamps the last, smaller part). Fails when a sequence is used
/// otherwise.
LogicalResult Importer::splitSequencesToSlices(onnx::GraphProto &graph) {
  ProtoConstants constants(graph);
  llvm::StringMap<const onnx::NodeProto *> splits;
  for (const onnx::NodeProto &node : graph.node()) {
    constants.add(*this, node);
    if (node.op_type() == "SplitToSequence" && node.output_size() == 1)
      splits[node.output(0)] = &node;
  }
  if (splits.empty())
    return success();
  int64_t fresh = 0;
  auto addInit = [&](ArrayRef<int64_t> v) {
    std::string name = "otc_split_" + std::to_string(fresh++);
    *graph.add_initializer() = intTensor(name, {int64_t(v.size())}, v);
    return name;
  };
  std::vector<onnx::NodeProto> rewritten;
  for (const onnx::NodeProto &node : graph.node()) {
    auto usesSplit = [&](const std::string &name) {
      return splits.count(name) != 0;
    };
    if (node.op_type() == "SplitToSequence" && splits.count(node.output(0)))
      continue;
    if (node.op_type() != "SequenceAt" || !usesSplit(node.input(0))) {
      if (llvm::any_of(node.input(), usesSplit))
        return nodeError(node) << "reads a SplitToSequence result; only "
                                  "SequenceAt at constant positions is "
                                  "supported";
      rewritten.push_back(node);
      continue;
    }
    const onnx::NodeProto &split = *splits[node.input(0)];
    const onnx::TensorProto *pos =
        node.input_size() > 1 ? constants.find(node.input(1)) : nullptr;
    const onnx::TensorProto *sizes =
        hasInput(split, 1) ? constants.find(split.input(1)) : nullptr;
    FailureOr<Const> p = pos ? tensorToConst(*pos, nodeLoc(node)) : Const();
    FailureOr<Const> sz = sizes ? tensorToConst(*sizes, nodeLoc(split))
                                : FailureOr<Const>(Const());
    if (!pos || failed(p) || p->isFloat || p->ints.size() != 1 ||
        (hasInput(split, 1) && (!sizes || failed(sz) || sz->isFloat)))
      return nodeError(node) << "needs a constant position and constant "
                                "split sizes";
    int64_t at = p->ints[0], start = 0, end = 0;
    if (!hasInput(split, 1) || sz->shape.empty()) {
      int64_t chunk = hasInput(split, 1) ? sz->ints[0] : 1;
      if (at < 0 || chunk <= 0)
        return nodeError(node) << "position " << at << " of chunks of " << chunk
                               << " is not supported";
      CheckedMath m;
      start = m.mul(at, chunk);
      end = m.add(start, chunk);
      if (!m.ok())
        return nodeError(node) << "position " << at << " of chunks of " << chunk
                               << " is out of range";
    } else {
      int64_t n = sz->ints.size();
      if (at < -n || at >= n)
        return nodeError(node) << "position " << at << " is out of range";
      at = at < 0 ? at + n : at;
      CheckedMath m;
      for (int64_t i = 0; i < at; ++i)
        start = m.add(start, sz->ints[i]);
      end = m.add(start, sz->ints[at]);
      if (!m.ok())
        return nodeError(node) << "split sizes add up to more than int64 "
                                  "holds";
    }
    int64_t axis = intAttr(split, "axis", 0);
    onnx::NodeProto slice;
    slice.set_name(node.name());
    slice.set_op_type("Slice");
    slice.add_input(split.input(0));
    slice.add_input(addInit({start}));
    slice.add_input(addInit({end}));
    slice.add_input(addInit({axis}));
    bool squeeze = !hasInput(split, 1) && intAttr(split, "keepdims", 1) == 0;
    slice.add_output(squeeze ? node.output(0) + "_kept" : node.output(0));
    rewritten.push_back(slice);
    if (squeeze) {
      onnx::NodeProto sq;
      sq.set_op_type("Squeeze");
      sq.add_input(slice.output(0));
      sq.add_input(addInit({axis}));
      sq.add_output(node.output(0));
      rewritten.push_back(sq);
    }
  }
  graph.clear_node();
  for (onnx::NodeProto &n : rewritten)
    *graph.add_node() = std::move(n);
  return success();
}

LogicalResult Importer::adaptNewerOpset(onnx::ModelProto &model) {
  registerCompatSchemas();
  onnx::GraphProto &graph = *model.mutable_graph();
  if (failed(splitSequencesToSlices(graph)))
    return failure();
  ProtoConstants constants(graph);
  bool usesCompat = false;
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    constants.add(*this, node);
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      continue;
    llvm::StringRef op = node.op_type();
    auto str = [&](llvm::StringRef name, llvm::StringRef dflt) {
      auto *a = attr(node, name);
      return a ? llvm::StringRef(a->s()) : dflt;
    };
    if (llvm::is_contained({"Gelu", "Mish", "GroupNormalization",
                            "RMSNormalization", "RotaryEmbedding", "Attention"},
                           op)) {
      node.set_domain(kCompatDomain);
      usesCompat = true;
    } else if (isReduceWithAxesInput(op)) {
      // Opset 18 moved axes from an attribute to an optional input.
      if (hasInput(node, 1)) {
        const onnx::TensorProto *t = constants.find(node.input(1));
        if (!t)
          return nodeError(node)
                 << "the axes input must be a compile-time constant";
        FailureOr<Const> axes = tensorToConst(*t, nodeLoc(node));
        if (failed(axes))
          return failure();
        if (axes->isFloat)
          return nodeError(node) << "the axes input must be integers";
        if (!axes->ints.empty()) {
          onnx::AttributeProto *a = node.add_attribute();
          a->set_name("axes");
          a->set_type(onnx::AttributeProto::INTS);
          for (int64_t v : axes->ints)
            a->add_ints(v);
        }
      }
      bool noAxes = !attr(node, "axes");
      if (node.input_size() > 1)
        node.mutable_input()->DeleteSubrange(1, node.input_size() - 1);
      if (intAttr(node, "noop_with_empty_axes", 0) && noAxes) {
        node.set_op_type("Identity");
        node.clear_attribute();
      }
      eraseAttr(node, "noop_with_empty_axes");
    } else if (op == "Split") {
      if (auto *a = attr(node, "num_outputs")) {
        if (a->i() != node.output_size())
          return nodeError(node) << "num_outputs = " << a->i() << " but "
                                 << node.output_size() << " outputs";
        if (hasInput(node, 1))
          return nodeError(node) << "has both a split input and num_outputs";
        node.set_domain(kCompatDomain);
        usesCompat = true;
      }
    } else if (op == "Pad") {
      if (str("mode", "constant") == "wrap")
        return nodeError(node) << "unsupported mode 'wrap'";
      if (hasInput(node, 3)) {
        node.set_domain(kCompatDomain);
        usesCompat = true;
      }
    } else if (op == "Resize") {
      if (intAttr(node, "antialias", 0) != 0)
        return nodeError(node) << "unsupported: antialias";
      if (attr(node, "axes"))
        return nodeError(node) << "unsupported: the axes attribute";
      if (str("keep_aspect_ratio_policy", "stretch") != "stretch")
        return nodeError(node) << "unsupported keep_aspect_ratio_policy '"
                               << str("keep_aspect_ratio_policy", "") << "'";
      eraseAttr(node, "antialias");
      eraseAttr(node, "keep_aspect_ratio_policy");
    } else if (op == "AveragePool") {
      if (llvm::any_of(intsAttr(node, "dilations", {}),
                       [](int64_t d) { return d != 1; }))
        return nodeError(node) << "unsupported: dilations other than 1";
      eraseAttr(node, "dilations");
    } else if (op == "Cast" || op == "CastLike") {
      eraseAttr(node, "saturate"); // float8 targets only
    } else if (!hasHandler(op)) {
      return nodeError(node) << "unsupported operator " << op;
    }
  }
  for (auto &imp : *model.mutable_opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx")
      imp.set_version(kLibraryOpset);
  if (usesCompat) {
    auto *imp = model.add_opset_import();
    imp->set_domain(kCompatDomain);
    imp->set_version(1);
  }
  if (model.ir_version() > kLibraryIrVersion)
    model.set_ir_version(kLibraryIrVersion);
  return success();
}

} // namespace otc::importer
