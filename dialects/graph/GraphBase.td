//===- GraphBase.td - graph dialect definition -------------*- tablegen -*-===//
//
// The `graph` dialect: tensors with value semantics. Forward ops follow ONNX
// operator semantics (one ONNX node, one op; opsets 13-17 normalised), and the
// dialect adds what training needs and ONNX lacks: gradient ops, losses and
// optimizer updates.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_GRAPH_BASE
#define OTC_GRAPH_BASE

include "mlir/IR/OpBase.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::otc::graph";
  let summary = "ONNX-semantics tensor ops plus training ops";
  let description = [{
    Value-semantics tensor operations. Parameters are function arguments
    tagged `otc.param = "<initializer name>"`; weights never live in the IR.
  }];
  let hasConstantMaterializer = 1;
}

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

// Tensors have static shapes: the importer resolves every dimension, and
// the verifiers and passes count elements, where a `?` would be -2^63.
class Graph_TensorOf<list<Type> allowedTypes>
    : StaticShapeTensorOf<allowedTypes>;
def Graph_F32Tensor : Graph_TensorOf<[F32]>;
def Graph_IndexTensor : Graph_TensorOf<[I64, I32]>;
def Graph_AnyTensor : Graph_TensorOf<[AnyType]>;
// Element types of arithmetic (dialects/graph/ElementTypes.h): f32 and the
// signed (signless) and unsigned integers.
def Graph_IntegerElement : AnyTypeOf<[I8, I16, I32, I64, UI8, UI16, UI32, UI64]>;
def Graph_NumericTensor : Graph_TensorOf<[F32, Graph_IntegerElement]>;
// What the comparison kernels order: float64 too.
def Graph_ComparableTensor : Graph_TensorOf<[F32, F64, Graph_IntegerElement]>;
def Graph_IntegerTensor : Graph_TensorOf<[Graph_IntegerElement]>;
def Graph_BoolTensor : Graph_TensorOf<[I1]>;
def Graph_ScalarF32 : 0DTensorOf<[F32]>;

#endif // OTC_GRAPH_BASE
