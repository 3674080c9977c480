//===- Functions.cpp - model-local functions inlined into the graph -------===//
//
// A model may define functions of its own (ModelProto.functions), which
// onnxscript writes whenever one @script function calls another. Each call
// is replaced by the function's body before anything else reads the graph:
// formal inputs and outputs become the call's values, the body's own values
// get names of their own, and attributes that refer to the function's
// (`ref_attr_name`) take the call's value or else the function's default
// (FunctionProto.attribute_proto). Calls inside bodies are inlined too.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/Importer.h"

#include "llvm/ADT/StringMap.h"

#include <google/protobuf/unknown_field_set.h>

#include <map>

namespace otc::importer {

namespace {

/// FunctionProto.attribute_proto (IR version 9), newer than the ONNX
/// library's schema: read from the message's unknown fields.
constexpr int kAttributeProtoField = 11;

/// The defaults of a function's attributes.
std::vector<onnx::AttributeProto>
attributeDefaults(const onnx::FunctionProto &f) {
  std::vector<onnx::AttributeProto> out;
  const auto &unknown = f.GetReflection()->GetUnknownFields(f);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField &u = unknown.field(i);
    onnx::AttributeProto a;
    if (u.number() == kAttributeProtoField &&
        u.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED &&
        a.ParseFromString(u.length_delimited()))
      out.push_back(std::move(a));
  }
  return out;
}

struct Inliner {
  Importer &imp;
  struct Function {
    const onnx::FunctionProto *proto;
    std::vector<onnx::AttributeProto> defaults;
  };
  llvm::StringMap<Function> functions; // by "domain:name"
  int64_t calls = 0;
  SmallVector<const onnx::FunctionProto *> active; // the calls being inlined

  static std::string key(llvm::StringRef domain, llvm::StringRef name) {
    return (domain + ":" + name).str();
  }
  const Function *find(const onnx::NodeProto &node) const {
    auto it = functions.find(key(node.domain(), node.op_type()));
    return it == functions.end() ? nullptr : &it->second;
  }

  /// Appends `node` to `out`, or the body of the function it calls.
  LogicalResult
  expand(const onnx::NodeProto &node,
         google::protobuf::RepeatedPtrField<onnx::NodeProto> &out) {
    const Function *fn = find(node);
    if (!fn) {
      *out.Add() = node;
      return success();
    }
    const onnx::FunctionProto *f = fn->proto;
    // ONNX forbids recursion; it would never end.
    if (llvm::is_contained(active, f))
      return imp.nodeError(node) << "function " << f->name() << " calls itself";
    if (node.input_size() > f->input_size() ||
        node.output_size() > f->output_size())
      return imp.nodeError(node)
             << "calls function " << f->name() << " with " << node.input_size()
             << " inputs and " << node.output_size() << " outputs; it has "
             << f->input_size() << " and " << f->output_size();
    // The call's values for the formal ones; the body's others are renamed
    // under a prefix of this call's own.
    std::string callName = node.name().empty() ? f->name() : node.name();
    std::string prefix = callName + "/" + std::to_string(calls++) + "/";
    std::map<std::string, std::string> names;
    for (int i = 0; i < f->input_size(); ++i)
      names[f->input(i)] = i < node.input_size() ? node.input(i) : "";
    for (int i = 0; i < f->output_size(); ++i)
      names[f->output(i)] =
          i < node.output_size() ? node.output(i) : prefix + f->output(i);
    auto rename = [&](const std::string &v) {
      if (v.empty())
        return v;
      auto it = names.find(v);
      return it != names.end() ? it->second : prefix + v;
    };
    for (const onnx::NodeProto &body : f->node()) {
      onnx::NodeProto copy = body;
      copy.set_name(callName + "/" +
                    (body.name().empty() ? body.op_type() : body.name()));
      for (std::string &v : *copy.mutable_input())
        v = rename(v);
      for (std::string &v : *copy.mutable_output())
        v = rename(v);
      copy.clear_attribute();
      for (const onnx::AttributeProto &a : body.attribute()) {
        if (a.type() == onnx::AttributeProto::GRAPH ||
            a.type() == onnx::AttributeProto::GRAPHS)
          return imp.nodeError(node)
                 << "function " << f->name() << " has a subgraph attribute ("
                 << body.op_type() << "." << a.name() << "); unsupported";
        if (a.ref_attr_name().empty()) {
          *copy.add_attribute() = a;
          continue;
        }
        // The call's value, else the function's default, else none.
        const onnx::AttributeProto *given = nullptr;
        for (const onnx::AttributeProto &c : node.attribute())
          if (c.name() == a.ref_attr_name())
            given = &c;
        for (const onnx::AttributeProto &d : fn->defaults)
          if (!given && d.name() == a.ref_attr_name())
            given = &d;
        if (!given)
          continue;
        onnx::AttributeProto *set = copy.add_attribute();
        *set = *given;
        set->set_name(a.name());
      }
      active.push_back(f);
      LogicalResult inlined = expand(copy, out);
      active.pop_back();
      if (failed(inlined))
        return failure();
    }
    return success();
  }
};

} // namespace

LogicalResult Importer::inlineFunctions(onnx::ModelProto &model) {
  if (model.functions_size() == 0)
    return success();
  int64_t modelOpset = 0;
  for (const auto &imp : model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx")
      modelOpset = imp.version();
  Inliner inliner{*this, {}};
  for (const onnx::FunctionProto &f : model.functions()) {
    // One ai.onnx opset for the whole graph: a body written against another
    // would need its own version conversion.
    for (const auto &imp : f.opset_import())
      if ((imp.domain().empty() || imp.domain() == "ai.onnx") &&
          imp.version() != modelOpset)
        return error() << "function " << f.name() << " uses opset "
                       << imp.version() << " of ai.onnx, the model "
                       << modelOpset << "; unsupported";
    if (!inliner.functions
             .try_emplace(Inliner::key(f.domain(), f.name()),
                          Inliner::Function{&f, attributeDefaults(f)})
             .second)
      return error() << "function " << f.domain() << "." << f.name()
                     << " is defined twice";
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const onnx::NodeProto &node : model.graph().node())
    if (failed(inliner.expand(node, nodes)))
      return failure();
  *model.mutable_graph()->mutable_node() = std::move(nodes);
  model.clear_functions();
  return success();
}

} // namespace otc::importer
