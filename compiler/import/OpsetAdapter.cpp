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

#include <mutex>

namespace otc::importer {

namespace {

constexpr int64_t kLibraryIrVersion = 8;

void registerCompatSchemas() {
  static std::once_flag once;
  std::call_once(once, [] {
    onnx::OpSchemaRegistry::DomainToVersionRange::Instance().AddDomainToVersion(
        kCompatDomain, 1, 1);
    auto define = [](const char *name, const char *doc) {
      onnx::OpSchema s(name, __FILE__, __LINE__);
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

    // Split-18 by num_outputs: equal parts, the last one smaller (Split-13
    // refuses parts that do not divide the axis).
    onnx::OpSchema split("Split", __FILE__, __LINE__);
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
          if (axis < 0 || axis >= rank || !in.dim(int(axis)).has_dim_value())
            return;
          int64_t dim = in.dim(int(axis)).dim_value();
          int64_t each = (dim + int64_t(n) - 1) / int64_t(n);
          for (size_t i = 0; i < n; ++i) {
            onnx::TensorShapeProto out = in;
            out.mutable_dim(int(axis))->set_dim_value(
                std::max<int64_t>(0, std::min(each, dim - int64_t(i) * each)));
            *onnx::getOutputShape(ctx, i) = out;
          }
        });
    onnx::OpSchemaRegistry::OpSchemaRegisterOnce reg(split);
  });
}

bool isReduceWithAxesInput(llvm::StringRef op) {
  return llvm::StringSwitch<bool>(op)
      .Cases("ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", true)
      .Cases("ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", true)
      .Case("ReduceLogSumExp", true)
      .Default(false);
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

LogicalResult Importer::adaptNewerOpset(onnx::ModelProto &model) {
  registerCompatSchemas();
  onnx::GraphProto &graph = *model.mutable_graph();
  // Integer constants by value name, for axes that become attributes.
  llvm::StringMap<const onnx::TensorProto *> constants;
  for (const auto &init : graph.initializer())
    constants[init.name()] = &init;
  bool usesCompat = false;
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      continue;
    llvm::StringRef op = node.op_type();
    if (op == "Constant" && node.output_size() == 1)
      if (auto *v = attr(node, "value"))
        constants[node.output(0)] = &v->t();
    auto str = [&](llvm::StringRef name, llvm::StringRef dflt) {
      auto *a = attr(node, name);
      return a ? llvm::StringRef(a->s()) : dflt;
    };
    if (op == "Gelu" || op == "Mish") {
      node.set_domain(kCompatDomain);
      usesCompat = true;
    } else if (isReduceWithAxesInput(op)) {
      // Opset 18 moved axes from an attribute to an optional input.
      if (hasInput(node, 1)) {
        auto it = constants.find(node.input(1));
        if (it == constants.end())
          return nodeError(node)
                 << "the axes input must be a compile-time constant";
        FailureOr<Const> axes = tensorToConst(*it->second, nodeLoc(node));
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
      if (hasInput(node, 3))
        return nodeError(node) << "unsupported: the axes input (opset 18)";
      if (str("mode", "constant") == "wrap")
        return nodeError(node) << "unsupported mode 'wrap'";
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
