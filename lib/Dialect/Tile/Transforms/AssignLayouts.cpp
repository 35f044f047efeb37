//===- AssignLayouts.cpp - Register layouts and shared swizzles -----------===//
//
// Gives every register fragment a #tile.layout and marks the shared tiles
// wgmma reads as 128-byte swizzled. Fragments that must share a type (the
// values an scf.for or scf.if ties together, a gemm's accumulator and
// result) form one class and get one layout.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Dialect/Tile/Transforms/Passes.h"
#include "Utils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace sinkattn::tile;

namespace sinkattn::tile {
#define GEN_PASS_DEF_TILEASSIGNLAYOUTS
#include "SinkAttn/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace sinkattn::tile

namespace {
/// 128-byte swizzle: the only shared layout our wgmma lowering reads.
constexpr int64_t kSwizzleBytes = 128;
/// Swizzled tiles are placed at this alignment (one swizzle pattern).
constexpr int64_t kSwizzleAlignment = 1024;

bool isFragment(Value value) { return isa<FragmentType>(value.getType()); }

/// Union-find over fragment values.
class FragmentClasses {
public:
  Value find(Value value) {
    auto it = parent.find(value);
    if (it == parent.end()) {
      parent[value] = value;
      order.push_back(value);
      return value;
    }
    if (it->second == value)
      return value;
    Value root = find(it->second);
    parent[value] = root;
    return root;
  }
  void unite(Value a, Value b) {
    Value rootA = find(a), rootB = find(b);
    if (rootA != rootB)
      parent[rootB] = rootA;
  }
  ArrayRef<Value> values() const { return order; }

private:
  DenseMap<Value, Value> parent;
  SmallVector<Value> order;
};

/// Where to report a problem with `value`.
Operation *reportingOp(Value value) {
  if (Operation *def = value.getDefiningOp())
    return def;
  return value.getParentBlock()->getParentOp();
}

/// Marks `alloc` 128-byte swizzled, aligned to one swizzle pattern.
void setSwizzled(memref::AllocOp alloc) {
  alloc->setAttr(TileDialect::kSwizzleAttrName,
                 Builder(alloc).getI64IntegerAttr(kSwizzleBytes));
  if (alloc.getAlignment().value_or(0) < kSwizzleAlignment)
    alloc.setAlignment(kSwizzleAlignment);
}

/// Marks the allocation behind gemm operand `tile` as swizzled, after
/// checking its shape suits the swizzled panels: `contiguous` elements per
/// row (the dimension wgmma reads along 128-byte rows) a multiple of 64
/// (128 bytes of 16-bit data) and rows a multiple of 8 (one swizzle atom).
LogicalResult markSwizzled(GemmOp gemm, Value tile, StringRef operand) {
  auto type = cast<MemRefType>(tile.getType());
  memref::AllocOp alloc = getSharedAllocation(tile);
  if (!alloc)
    return gemm.emitOpError()
           << "operand " << operand
           << " must be (a view of) a shared tile allocated in this function "
              "with memref.alloc, so that its swizzled layout can be chosen";
  MemRefType allocType = alloc.getType();
  ArrayRef<int64_t> shape = type.getShape();
  // Whole rows of the allocation's tiles (a warpgroup's rows of a shared
  // tile), or whole 64-column panels of them (a warpgroup's half of a
  // 128-column tile): the swizzle spans a panel's 128-byte rows, and the
  // panels lie one after another, so a column slice must start on one.
  if (allocType.getRank() < 2 ||
      allocType.getShape()[allocType.getRank() - 2] < shape[0] ||
      allocType.getShape().back() < shape[1])
    return gemm.emitOpError()
           << "operand " << operand << " (" << shape[0] << "x" << shape[1]
           << ") does not fit the tiles of its allocation " << allocType;
  // Operand B untransposed (N along its rows, wgmma's MN-major B) may also
  // be half a panel, 32 columns at either half: the swizzle is a function
  // of the address, so a descriptor whose start lies 64 bytes into the
  // panel reads the elements TMA wrote there (wgmma's N = 32; the D 64
  // split's dQ panels).
  const bool halfPanel = operand == "B" && !gemm.getTransposeB() &&
                         shape[1] == 32 && allocType.getShape().back() % 64 == 0;
  const int64_t sliceAlignment = halfPanel ? 32 : 64;
  if (allocType.getShape().back() != shape[1] &&
      (allocType.getShape().back() % 64 != 0 ||
       !hasAlignedViewOffsets(tile, /*fromBack=*/0, sliceAlignment)))
    return gemm.emitOpError()
           << "operand " << operand << " must be whole rows of a tile or "
           << "whole 64-column panels of it"
           << (halfPanel ? " (or, N along its rows, half of one)" : "")
           << ": its columns start at an offset that is not a provable "
              "multiple of "
           << sliceAlignment << " (a constant, or a product with one) in "
           << allocType;
  if ((shape[1] % 64 != 0 && !halfPanel) || shape[0] % 8 != 0)
    return gemm.emitOpError()
           << "operand " << operand << " (" << shape[0] << "x" << shape[1]
           << ") cannot take the 128-byte swizzle: it needs a multiple of 64 "
              "contiguous elements per row and a multiple of 8 rows";
  if (shape[0] > 256)
    return gemm.emitOpError()
           << "operand " << operand << " has " << shape[0]
           << " rows; a swizzled tile is loaded in boxes of at most 256 rows";
  setSwizzled(alloc);
  return success();
}

/// Whether `alloc` is a staging tile for stores to global memory (TMA
/// stores or reduce-adds, or 16-byte vector stores of 16-bit elements): its
/// trailing two dimensions a tile of at most 256 rows (a TMA box), written
/// only by fragment stores that can follow the swizzle (checkSwizzledStore:
/// it also checks the tile is whole panels of 8-row periods) and read only
/// by those copies, each through the allocation or whole-tile views of it
/// (one stage of several). Swizzling it spreads a fragment store's elements
/// over the banks: unswizzled, the eight rows a warp writes at once sit a row's
/// bytes apart (128 to 512), in the same banks (an 8-way conflict).
bool isStoreStaging(memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  ArrayRef<int64_t> tile = type.getShape().take_back(2);
  if (!isSharedMemory(type) || type.getRank() < 2 || !type.hasStaticShape() ||
      tile[0] > 256 || alloc->hasAttr(TileDialect::kSwizzleAttrName))
    return false;
  bool stored = false, copied = false;
  SmallVector<Value> tiles = {alloc.getResult()};
  while (!tiles.empty()) {
    Value view = tiles.pop_back_val();
    for (Operation *user : view.getUsers()) {
      if (auto subview = dyn_cast<memref::SubViewOp>(user)) {
        // A whole tile: the trailing sizes are the tile's (so their
        // offsets are 0), unit strides.
        MemRefType viewType = subview.getType();
        if (subview.getSource() != view || viewType.getRank() < 2 ||
            viewType.getShape().take_back(2) != tile ||
            !llvm::all_of(subview.getStaticStrides(),
                          [](int64_t stride) { return stride == 1; }))
          return false;
        tiles.push_back(subview.getResult());
      } else if (auto store = dyn_cast<StoreOp>(user)) {
        if (store.getDest() != view || !checkSwizzledStore(store).empty())
          return false;
        stored = true;
      } else if (auto copy = dyn_cast<CopyOp>(user)) {
        bool vectorOf16Bit = copy.getCopyEngine() == CopyEngine::vector &&
                             type.getElementTypeBitWidth() == 16;
        if (copy.getSource() != view ||
            (copy.getCopyEngine() != CopyEngine::tma && !vectorOf16Bit))
          return false;
        copied = true;
      } else {
        return false;
      }
    }
  }
  return stored && copied;
}

struct TileAssignLayoutsPass
    : public sinkattn::tile::impl::TileAssignLayoutsBase<TileAssignLayoutsPass> {
  void runOnOperation() override {
    FragmentClasses classes;
    DenseSet<Value> usedAsOperandA, usedAsAccumulator;
    bool failedAny = false;
    auto fail = [&](InFlightDiagnostic diag) {
      failedAny = true;
      (void)diag;
    };

    getOperation()->walk([&](Operation *op) {
      for (Value result : op->getResults())
        if (isFragment(result))
          classes.find(result);
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            if (isFragment(arg)) {
              if (isa<FunctionOpInterface>(op))
                fail(op->emitOpError()
                     << "takes a register fragment argument; fragments live "
                        "inside one kernel and have no calling convention");
              classes.find(arg);
            }

      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        for (auto [init, arg, result, yielded] :
             llvm::zip(loop.getInitArgs(), loop.getRegionIterArgs(),
                       loop.getResults(), loop.getYieldedValues())) {
          if (!isFragment(init))
            continue;
          classes.unite(init, arg);
          classes.unite(init, result);
          classes.unite(init, yielded);
        }
      } else if (auto branch = dyn_cast<scf::IfOp>(op)) {
        for (auto [index, result] : llvm::enumerate(branch.getResults())) {
          if (!isFragment(result))
            continue;
          classes.unite(result, branch.thenYield().getOperand(index));
          if (!branch.getElseRegion().empty())
            classes.unite(result, branch.elseYield().getOperand(index));
        }
      } else if (auto gemm = dyn_cast<GemmOp>(op)) {
        classes.unite(gemm.getAcc(), gemm.getResult());
        usedAsAccumulator.insert(gemm.getAcc());
        if (isFragment(gemm.getA()))
          usedAsOperandA.insert(gemm.getA());
        else if (failed(markSwizzled(gemm, gemm.getA(), "A")))
          failedAny = true;
        if (failed(markSwizzled(gemm, gemm.getB(), "B")))
          failedAny = true;
      } else if (auto scale = dyn_cast<ScaleRowsOp>(op)) {
        // Result and source are one type (their registers correspond).
        classes.unite(scale.getSource(), scale.getResult());
      } else if (auto wait = dyn_cast<GemmWaitOp>(op)) {
        for (auto [operand, result] :
             llvm::zip(wait.getFragments(), wait.getResults()))
          classes.unite(operand, result);
      } else if (auto reduce = dyn_cast<ReduceOp>(op)) {
        if (reduce.getDim() != 1)
          fail(reduce.emitOpError()
               << "reduces along dimension " << reduce.getDim()
               << ": only row reductions (dimension 1) have a register layout "
                  "(#tile.layout<rows>)");
      } else if (!isa<scf::YieldOp, MapOp, YieldOp, FillOp, CastOp, StoreOp,
                       GemmWaitOp, PartialReduceOp>(op) &&
                 !isa<FunctionOpInterface>(op)) {
        // Any other op must not produce or carry fragments: we would not
        // know how to tie its values.
        for (Value operand : op->getOperands())
          if (isFragment(operand) && op->getNumRegions() > 0)
            fail(op->emitOpError()
                 << "carries register fragments through regions, which "
                    "tile-assign-layouts only follows for scf.for and scf.if");
        if (isa<func::ReturnOp, gpu::ReturnOp>(op) &&
            llvm::any_of(op->getOperands(), isFragment))
          fail(op->emitOpError() << "returns a register fragment; fragments "
                                    "have no calling convention");
      }
    });
    if (failedAny)
      return signalPassFailure();
    getOperation()->walk([&](memref::AllocOp alloc) {
      if (isStoreStaging(alloc))
        setSwizzled(alloc);
    });

    // One decision per class.
    DenseMap<Value, LayoutKind> kindOfRoot;
    DenseMap<Value, bool> rootIsOperandA, rootIsAccumulator;
    for (Value value : classes.values()) {
      Value root = classes.find(value);
      if (usedAsOperandA.contains(value))
        rootIsOperandA[root] = true;
      if (usedAsAccumulator.contains(value))
        rootIsAccumulator[root] = true;
    }
    for (Value value : classes.values()) {
      Value root = classes.find(value);
      if (kindOfRoot.count(root))
        continue;
      auto type = cast<FragmentType>(value.getType());
      LayoutKind kind = type.getRank() == 1 ? LayoutKind::rows
                        : rootIsOperandA.lookup(root) ? LayoutKind::operand_a
                                                      : LayoutKind::accumulator;
      if (rootIsOperandA.lookup(root) && rootIsAccumulator.lookup(root)) {
        fail(reportingOp(value)->emitOpError()
             << "produces a fragment that is used both as a wgmma register A "
                "operand and as an accumulator; convert it with tile.cast");
        continue;
      }
      std::string reason =
          checkLayout(kind, type.getShape(), type.getElementType());
      if (!reason.empty()) {
        fail(reportingOp(value)->emitOpError()
             << "cannot give " << type << " a register layout: " << reason);
        continue;
      }
      kindOfRoot[root] = kind;
    }
    if (failedAny)
      return signalPassFailure();

    MLIRContext *context = &getContext();
    for (Value value : classes.values()) {
      auto type = cast<FragmentType>(value.getType());
      LayoutKind kind = kindOfRoot.lookup(classes.find(value));
      if (std::optional<LayoutKind> existing = getLayoutKind(type)) {
        if (*existing != kind)
          fail(reportingOp(value)->emitOpError()
               << "has a fragment of layout #tile.layout<"
               << stringifyLayoutKind(*existing) << "> where its uses need #tile.layout<"
               << stringifyLayoutKind(kind) << ">");
        continue;
      }
      value.setType(FragmentType::get(context, type.getShape(),
                                      type.getElementType(),
                                      LayoutAttr::get(context, kind)));
    }
    if (failedAny)
      return signalPassFailure();
  }
};
} // namespace
