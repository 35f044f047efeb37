//===- TileTypes.td - Types of the tile dialect ------------*- tablegen -*-===//

#ifndef SINKATTN_DIALECT_TILE_IR_TILETYPES_TD
#define SINKATTN_DIALECT_TILE_IR_TILETYPES_TD

include "SinkAttn/Dialect/Tile/IR/TileDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

// Same trait as builtin's ValueSemantics (declared in BuiltinTypes.td, which
// we do not include to keep builtin type definitions out of our tablegen).
def Tile_ValueSemantics : NativeTypeTrait<"ValueSemantics"> {
  let cppNamespace = "::mlir";
}

class Tile_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Tile_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Tile_BarrierArrayType : Tile_Type<"BarrierArray", "barriers"> {
  let summary = "an array of mbarriers in shared memory";
  let description = [{
    `!tile.barriers<N>` is an array of `N` mbarrier objects (8 bytes each) in
    shared memory, created by `tile.alloc_barrier`; 1 ≤ N ≤ 29056, as many
    as fill the 232448 bytes of shared memory a block may use. Each slot has its own
    arrive count, fixed at allocation. Ops address a slot with an `index`
    value: `%bars[%i]`.

    Example:

    ```mlir
    %bars = tile.alloc_barrier [1, 128] : !tile.barriers<2>
    ```
  }];
  let parameters = (ins "int64_t":$size);
  let assemblyFormat = "`<` $size `>`";
  let genVerifyDecl = 1;
}

def Tile_FragmentType : Tile_Type<"Fragment", "fragment",
    [ShapedTypeInterface, Tile_ValueSemantics]> {
  let summary = "a register tile distributed over the threads of a warpgroup";
  let description = [{
    `!tile.fragment<64x128xf32>` is a tile held in registers. Shapes are static
    and of rank 1 (row vectors, e.g. the running max of a softmax) or 2,
    with at most 65536 elements (512 per thread of a warpgroup).
    Element types: `f32`, `f16`, `bf16`, `i32`, `i1`.

    An optional layout attribute says how elements are distributed over the
    threads; the layout-assignment pass attaches one to every fragment before
    lowering to per-thread registers:

    ```mlir
    !tile.fragment<64x128xf32>
    !tile.fragment<64x128xf32, #some.layout>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$shape,
    "::mlir::Type":$elementType,
    OptionalParameter<"::mlir::Attribute">:$layout
  );
  let builders = [
    TypeBuilderWithInferredContext<(ins
        "::llvm::ArrayRef<int64_t>":$shape, "::mlir::Type":$elementType,
        CArg<"::mlir::Attribute", "{}">:$layout), [{
      return $_get(elementType.getContext(), shape, elementType, layout);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Fragments are always ranked.
    bool hasRank() const { return true; }
    /// ShapedTypeInterface: a fragment of another shape or element type,
    /// with the layout dropped (a layout is specific to one shape).
    ::mlir::ShapedType cloneWith(std::optional<::llvm::ArrayRef<int64_t>> shape,
                                 ::mlir::Type elementType) const;
    int64_t getRank() const { return getShape().size(); }
    /// Number of elements in the tile.
    int64_t getNumElements() const;
  }];
}

#endif // SINKATTN_DIALECT_TILE_IR_TILETYPES_TD
