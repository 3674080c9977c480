//===- GraphInterfaces.td - graph op interfaces ------------*- tablegen -*-===//

#ifndef OTC_GRAPH_INTERFACES
#define OTC_GRAPH_INTERFACES

include "mlir/IR/OpBase.td"

def GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::otc::graph";
  let description = [{
    An op with a derivative. Reverse-mode autodiff calls `buildGradients` with
    the gradient of each result (a null Value where a result has none) and
    receives the gradient of each operand (null where an operand is not
    differentiable or receives nothing). Ops are built at the builder's
    insertion point.
  }];
  let methods = [
    InterfaceMethod<
      "Builds operand gradients from result gradients.",
      "::mlir::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // OTC_GRAPH_INTERFACES
