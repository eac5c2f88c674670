//===- AccelPhiDecompose.cpp - Split aggregate and vector phis ------------===//
//
// Part of llvmaccel, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The pass in four steps (see AccelPhiDecompose.h for what and why):
///
/// 1. Candidate discovery: every phi and select of a first-class aggregate,
///    and every loop-header phi of a fixed vector narrower than the target's
///    vector registers. Each candidate's type is flattened into leaves (index
///    paths to its scalar elements; vectors inside aggregates are leaves).
/// 2. Legality and cost: a candidate is declined when it has more leaves
///    than max-elements, when its block has no insertion point (catchswitch),
///    or when an incoming value is the result of an invoke or callbr (its
///    elements cannot be extracted before the edge that uses them).
/// 3. Expansion: one scalar phi per leaf for every phi candidate first, so
///    that phis feeding each other (loop nests, LCSSA phis, phis fed by
///    selects) are wired part to part; then the incoming parts (taken from
///    the insertvalue/insertelement chains that built a value, folded from
///    constants, or extracted once right after the value's definition); then
///    the users: extractvalue/extractelement users get the part, any other
///    user the aggregate rebuilt once after the phis. Parts whose incoming
///    values are all the same value are folded, unless that would take a
///    value out of its loop (LCSSA is kept). In the loop of a split vector
///    phi, lane-wise vector instructions whose users are all split go lane
///    by lane too (a vector load becomes one load per lane of the same
///    bytes), and the vector phis they feed outside the header (LCSSA) are
///    split with them, so that the loop keeps no vector value.
/// 4. Shape anchors (AccelPhiDecomposeAnchors.cpp): phis whose incoming
///    values are equal by llvm.assume are folded; a size-like integer phi or
///    select (a loop-invariant bound, index or stride of some loop) whose
///    incoming values are all multiples of 2^k or all lie in a range it is
///    not known to gets an llvm.assume stating it where the paths converge.
///
/// Every decision taken or declined is an optimization remark named
/// accel-phi-decompose.
///
//===----------------------------------------------------------------------===//

#include "AccelPhiDecompose.h"
#include "Compat.h"
#include "PassParams.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/Support/Debug.h"
#include "llvm/Transforms/Utils/Local.h"

#include <map>
#include <string>
#include <vector>

using namespace llvm;

#define DEBUG_TYPE "accel-phi-decompose"

STATISTIC(NumAggregatePhis, "Aggregate phis split into scalar phis");
STATISTIC(NumVectorPhis, "Vector phis split into scalar phis");
STATISTIC(NumSelects, "Aggregate selects split into scalar selects");
STATISTIC(NumScalarParts, "Scalar phis and selects created");
STATISTIC(NumPartsFolded, "Scalar parts folded (all incoming values equal)");
STATISTIC(NumLaneOps, "Lane-wise vector instructions computed lane by lane");
STATISTIC(NumRebuilt, "Aggregates rebuilt for users other than extracts");
STATISTIC(NumDeclined, "Aggregate or vector phis and selects left alone");

/// The documented range of max-elements.
static constexpr unsigned MaxElementsParam = 256;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

Expected<AccelPhiDecomposeOptions>
llvm::parseAccelPhiDecomposeOptions(StringRef Params) {
  AccelPhiDecomposeOptions Opts;
  accel::PassParamParser P("accel-phi-decompose");
  P.integer("max-elements", Opts.MaxElements, 1, MaxElementsParam);
  P.flag("vectors", Opts.Vectors);
  P.flag("anchors", Opts.Anchors);
  if (Error E = P.parse(Params))
    return std::move(E);
  return Opts;
}

void AccelPhiDecomposePass::printPipeline(
    raw_ostream &OS, function_ref<StringRef(StringRef)> MapClassName2PassName) {
  OS << "accel-phi-decompose<max-elements=" << Opts.MaxElements << ';';
  OS << (Opts.Vectors ? "" : "no-") << "vectors;";
  OS << (Opts.Anchors ? "" : "no-") << "anchors>";
}

//===----------------------------------------------------------------------===//
// Leaves: the scalar elements of a type
//===----------------------------------------------------------------------===//

namespace {

using IndexPath = SmallVector<unsigned, 4>;

/// One scalar element of an aggregate (or one lane of a vector): the index
/// path that reaches it and its type.
struct Leaf {
  IndexPath Path;
  Type *Ty;
};

bool isAggregate(Type *T) { return T->isStructTy() || T->isArrayTy(); }

/// Number of leaves of \p T, counting no further than \p Limit + 1.
uint64_t countLeaves(Type *T, uint64_t Limit) {
  if (auto *ST = dyn_cast<StructType>(T)) {
    uint64_t N = 0;
    for (Type *E : ST->elements()) {
      N += countLeaves(E, Limit);
      if (N > Limit)
        return Limit + 1;
    }
    return N;
  }
  if (auto *AT = dyn_cast<ArrayType>(T)) {
    if (AT->getNumElements() == 0)
      return 0;
    uint64_t Each = countLeaves(AT->getElementType(), Limit);
    if (Each == 0)
      return 0;
    if (AT->getNumElements() > Limit || Each * AT->getNumElements() > Limit)
      return Limit + 1;
    return Each * AT->getNumElements();
  }
  return 1;
}

void collectLeaves(Type *T, IndexPath &Prefix, SmallVectorImpl<Leaf> &Out) {
  if (auto *ST = dyn_cast<StructType>(T)) {
    for (unsigned I = 0, E = ST->getNumElements(); I != E; ++I) {
      Prefix.push_back(I);
      collectLeaves(ST->getElementType(I), Prefix, Out);
      Prefix.pop_back();
    }
    return;
  }
  if (auto *AT = dyn_cast<ArrayType>(T)) {
    for (unsigned I = 0, E = AT->getNumElements(); I != E; ++I) {
      Prefix.push_back(I);
      collectLeaves(AT->getElementType(), Prefix, Out);
      Prefix.pop_back();
    }
    return;
  }
  Out.push_back({Prefix, T});
}

/// The leaves of a candidate's type: the lanes of a vector, the scalar (or
/// vector) elements of an aggregate.
SmallVector<Leaf, 8> leavesOf(Type *T) {
  SmallVector<Leaf, 8> Out;
  if (auto *VT = dyn_cast<FixedVectorType>(T)) {
    for (unsigned I = 0, E = VT->getNumElements(); I != E; ++I)
      Out.push_back({IndexPath{I}, VT->getElementType()});
    return Out;
  }
  IndexPath Prefix;
  collectLeaves(T, Prefix, Out);
  return Out;
}

std::string pathSuffix(ArrayRef<unsigned> Path) {
  std::string S;
  for (unsigned I : Path)
    S += "." + std::to_string(I);
  return S;
}

/// The name parts of \p V are named after (MLIR's output names nothing).
std::string baseName(const Value *V, StringRef Default) {
  return V->hasName() ? V->getName().str() : Default.str();
}

std::string typeName(Type *T) {
  std::string S;
  raw_string_ostream OS(S);
  T->print(OS);
  return S;
}

//===----------------------------------------------------------------------===//
// The decomposer
//===----------------------------------------------------------------------===//

/// A phi or select being split, with its parts (one value per leaf).
struct Split {
  Instruction *Old;
  SmallVector<Leaf, 8> Leaves;
  SmallVector<Value *, 8> Parts;
  Value *Rebuilt = nullptr;
  bool IsVector = false;
  unsigned ExtractUsers = 0, OtherUsers = 0;
};

class PhiDecomposer {
public:
  PhiDecomposer(Function &F, const AccelPhiDecomposeOptions &Opts,
                DominatorTree &DT, LoopInfo &LI, AssumptionCache &AC,
                TargetTransformInfo &TTI, OptimizationRemarkEmitter &ORE)
      : F(F), Opts(Opts), DT(DT), LI(LI), AC(AC), TTI(TTI), ORE(ORE),
        DL(F.getParent()->getDataLayout()) {}

  bool run();

private:
  // Candidate discovery, legality and cost.
  void collectCandidates();
  void addCandidate(Instruction &I, SmallVector<Leaf, 8> Leaves);
  void collectLaneWise();
  bool isLaneWise(Instruction &I, unsigned Lanes);
  bool isCandidateType(Instruction &I);
  bool legalAndProfitable(Instruction &I, SmallVectorImpl<Leaf> &Leaves);
  void decline(Instruction &I, StringRef Name, const Twine &Why);

  // Expansion.
  bool decompose();
  Value *partOf(Value *V, ArrayRef<unsigned> Path, Type *LeafTy);
  Value *candidatePart(Split &S, ArrayRef<unsigned> Path);
  Value *extractPart(Value *V, ArrayRef<unsigned> Path);
  Value *lanePart(Instruction &I, unsigned Lane);
  void materializeSelect(Split &S);
  Value *rebuild(Split &S);
  Value *rebuildSub(Split &S, ArrayRef<unsigned> Prefix, Type *Ty,
                    Instruction *Before);
  void rewriteUsers(Split &S);
  bool feedsOnlyCandidates(Instruction *I, unsigned Depth = 0);
  void foldParts(SmallVectorImpl<WeakTrackingVH> &Parts);
  void remarkSplit(const Split &S);

  Function &F;
  const AccelPhiDecomposeOptions &Opts;
  DominatorTree &DT;
  LoopInfo &LI;
  AssumptionCache &AC;
  TargetTransformInfo &TTI;
  OptimizationRemarkEmitter &ORE;
  const DataLayout &DL;

  std::vector<Split> Splits;
  DenseMap<Instruction *, unsigned> SplitIndex;
  std::map<std::pair<Value *, std::vector<unsigned>>, Value *> Extracts;
  /// Lane-wise vector instructions of split vector phis' loops that are
  /// computed lane by lane instead (their users are all split or scalarized),
  /// and their scalar lanes.
  SetVector<Instruction *> LaneWise;
  DenseMap<std::pair<Instruction *, unsigned>, Value *> Lanes;
  /// The last extract made after each instruction (null: at the entry, for
  /// arguments and globals).
  DenseMap<Value *, Instruction *> LastExtract;
};

//===----------------------------------------------------------------------===//
// Candidate discovery, legality and cost
//===----------------------------------------------------------------------===//

void PhiDecomposer::decline(Instruction &I, StringRef Name, const Twine &Why) {
  ++NumDeclined;
  LLVM_DEBUG(dbgs() << DEBUG_TYPE ": declined " << I << ": " << Why << "\n");
  ORE.emit([&] {
    return OptimizationRemarkMissed(DEBUG_TYPE, Name, &I) << Why.str();
  });
}

/// Whether \p I is a phi or select whose type the pass splits at all: a
/// first-class aggregate, or (for phis) a fixed vector.
bool PhiDecomposer::isCandidateType(Instruction &I) {
  Type *T = I.getType();
  if (isAggregate(T))
    return isa<PHINode>(I) || isa<SelectInst>(I);
  return isa<PHINode>(I) && isa<FixedVectorType>(T);
}

bool PhiDecomposer::legalAndProfitable(Instruction &I,
                                       SmallVectorImpl<Leaf> &Leaves) {
  Type *T = I.getType();
  BasicBlock *BB = I.getParent();
  bool IsVector = isa<FixedVectorType>(T);
  std::string What = (isa<PHINode>(I) ? "phi of " : "select of ") + typeName(T);

  if (IsVector) {
    // Only loop-carried vectors are worth splitting: the loop vectorizer
    // refuses loops with vector-typed values, and a vector narrower than the
    // registers leaves most of each register idle.
    if (!LI.isLoopHeader(BB))
      return false;
    if (!Opts.Vectors) {
      decline(I, "VectorsDisabled", What + " is loop-carried, but no-vectors");
      return false;
    }
    uint64_t Bits = DL.getTypeSizeInBits(T).getFixedValue();
    uint64_t RegBits =
        TTI.getRegisterBitWidth(TargetTransformInfo::RGK_FixedWidthVector)
            .getFixedValue();
    if (RegBits && Bits >= RegBits) {
      decline(I, "VectorFillsRegisters",
              What + " (" + Twine(Bits) + " bits) already fills the target's " +
                  Twine(RegBits) + "-bit vector registers");
      return false;
    }
  }

  uint64_t N = IsVector ? cast<FixedVectorType>(T)->getNumElements()
                        : countLeaves(T, Opts.MaxElements);
  if (N == 0)
    return false;
  if (N > Opts.MaxElements) {
    decline(I, "TooManyElements",
            What + " has more than max-elements=" + Twine(Opts.MaxElements) +
                " elements");
    return false;
  }
  if (BB->getFirstInsertionPt() == BB->end()) {
    decline(I, "NoInsertionPoint",
            What + " is in a block with no insertion point");
    return false;
  }
  if (auto *PN = dyn_cast<PHINode>(&I))
    for (Value *In : PN->incoming_values())
      if (isa<InvokeInst>(In) || isa<CallBrInst>(In)) {
        decline(I, "TerminatorIncoming",
                What +
                    " has an incoming value defined by an invoke or "
                    "callbr, whose elements cannot be extracted on the edge");
        return false;
      }
  Leaves = leavesOf(T);
  return true;
}

void PhiDecomposer::addCandidate(Instruction &I, SmallVector<Leaf, 8> Leaves) {
  Split S;
  S.Old = &I;
  S.Leaves = std::move(Leaves);
  S.IsVector = isa<FixedVectorType>(I.getType());
  SplitIndex[&I] = Splits.size();
  Splits.push_back(std::move(S));
  LLVM_DEBUG(dbgs() << DEBUG_TYPE ": candidate " << I << "\n");
}

void PhiDecomposer::collectCandidates() {
  for (BasicBlock &BB : F)
    for (Instruction &I : BB) {
      if (!isCandidateType(I))
        continue;
      SmallVector<Leaf, 8> Leaves;
      if (legalAndProfitable(I, Leaves))
        addCandidate(I, std::move(Leaves));
    }
  if (any_of(Splits, [](const Split &S) { return S.IsVector; }))
    collectLaneWise();
}

/// Whether \p I computes each of its \p Lanes lanes from the same lane of
/// its vector operands alone, as one scalar instruction could.
bool PhiDecomposer::isLaneWise(Instruction &I, unsigned Lanes) {
  auto *VT = dyn_cast<FixedVectorType>(I.getType());
  if (!VT || VT->getNumElements() != Lanes)
    return false;
  auto SameLanes = [&](Value *Op) {
    auto *OT = dyn_cast<FixedVectorType>(Op->getType());
    return !OT || OT->getNumElements() == Lanes;
  };
  if (!all_of(I.operands(), [&](Use &U) { return SameLanes(U.get()); }))
    return false;
  if (isa<BinaryOperator>(I) || isa<UnaryOperator>(I) || isa<CmpInst>(I) ||
      isa<SelectInst>(I))
    return true;
  if (auto *C = dyn_cast<CastInst>(&I))
    return C->getOperand(0)->getType()->isVectorTy();
  if (auto *LI = dyn_cast<LoadInst>(&I))
    return LI->isSimple() &&
           DL.getTypeStoreSizeInBits(VT->getElementType()) ==
               DL.getTypeSizeInBits(VT->getElementType()) &&
           DL.getTypeSizeInBits(VT->getElementType()) % 8 == 0;
  if (auto *II = dyn_cast<IntrinsicInst>(&I)) {
    switch (II->getIntrinsicID()) {
    case Intrinsic::fma:
    case Intrinsic::fmuladd:
    case Intrinsic::fabs:
    case Intrinsic::sqrt:
    case Intrinsic::minnum:
    case Intrinsic::maxnum:
    case Intrinsic::minimum:
    case Intrinsic::maximum:
    case Intrinsic::copysign:
    case Intrinsic::smax:
    case Intrinsic::smin:
    case Intrinsic::umax:
    case Intrinsic::umin:
      return all_of(II->args(),
                    [](Value *A) { return A->getType()->isVectorTy(); });
    default:
      return false;
    }
  }
  return false;
}

/// Lane-wise instructions in the loops of split vector phis whose every user
/// is split, scalarized too, or a constant-lane extractelement: the loop then
/// keeps no vector value (the vectorizer refuses loops with vector-typed
/// values, and InstCombine would fold the lanes back into a vector phi).
/// LCSSA and other non-header vector phis fed by them are split as well.
void PhiDecomposer::collectLaneWise() {
  SmallVector<Instruction *, 16> Work;
  for (const Split &S : Splits) {
    auto *PN = dyn_cast<PHINode>(S.Old);
    if (!S.IsVector || !PN)
      continue;
    Loop *L = LI.getLoopFor(PN->getParent());
    unsigned Lanes = S.Leaves.size();
    for (Value *In : PN->incoming_values())
      if (auto *I = dyn_cast<Instruction>(In))
        Work.push_back(I);
    while (!Work.empty()) {
      Instruction *I = Work.pop_back_val();
      if (LaneWise.count(I) || SplitIndex.count(I) || !L->contains(I) ||
          !isLaneWise(*I, Lanes))
        continue;
      LaneWise.insert(I);
      for (Value *Op : I->operands())
        if (auto *OI = dyn_cast<Instruction>(Op))
          Work.push_back(OI);
    }
  }
  // Vector phis outside loop headers that merge those values (LCSSA phis).
  for (BasicBlock &BB : F)
    for (PHINode &PN : BB.phis()) {
      auto *VT = dyn_cast<FixedVectorType>(PN.getType());
      if (!VT || SplitIndex.count(&PN) || !Opts.Vectors ||
          VT->getNumElements() > Opts.MaxElements ||
          BB.getFirstInsertionPt() == BB.end())
        continue;
      bool Fed = false, Legal = true;
      for (Value *In : PN.incoming_values()) {
        auto *I = dyn_cast<Instruction>(In);
        if (I && (isa<InvokeInst>(I) || isa<CallBrInst>(I)))
          Legal = false;
        if (I && (LaneWise.count(I) || SplitIndex.count(I)))
          Fed = true;
      }
      if (Fed && Legal)
        addCandidate(PN, leavesOf(VT));
    }
  // Keep only the instructions whose users are all split or scalarized, and
  // only the vector phis whose values inside their loop all are: a loop that
  // must keep a vector value gains nothing from a split phi (InstCombine
  // folds the lanes back into a vector phi).
  SmallPtrSet<Instruction *, 8> Dropped;
  auto IsSplit = [&](Instruction *I) {
    return SplitIndex.count(I) && !Dropped.count(I);
  };
  while (true) {
    bool Changed = false;
    SmallVector<Instruction *, 8> Drop;
    for (Instruction *I : LaneWise)
      if (!all_of(I->users(), [&](User *U) {
            auto *UI = cast<Instruction>(U);
            if (LaneWise.count(UI) || IsSplit(UI))
              return true;
            auto *EE = dyn_cast<ExtractElementInst>(UI);
            return EE && isa<ConstantInt>(EE->getIndexOperand());
          }))
        Drop.push_back(I);
    for (Instruction *I : Drop)
      LaneWise.remove(I);
    Changed |= !Drop.empty();
    for (const Split &S : Splits) {
      auto *PN = dyn_cast<PHINode>(S.Old);
      if (!S.IsVector || !PN || Dropped.count(PN))
        continue;
      bool Whole;
      if (LI.isLoopHeader(PN->getParent())) {
        Loop *L = LI.getLoopFor(PN->getParent());
        Whole = all_of(PN->incoming_values(), [&](Value *In) {
          auto *I = dyn_cast<Instruction>(In);
          return !I || !L->contains(I) || LaneWise.count(I) || IsSplit(I);
        });
      } else {
        // An LCSSA phi is split only with the values it merges.
        Whole = any_of(PN->incoming_values(), [&](Value *In) {
          auto *I = dyn_cast<Instruction>(In);
          return I && (LaneWise.count(I) || IsSplit(I));
        });
      }
      if (!Whole) {
        Dropped.insert(PN);
        Changed = true;
        decline(*PN, "VectorStaysInLoop",
                "phi of " + typeName(PN->getType()) +
                    ": a vector value of its loop has a user that needs the "
                    "whole vector, so the loop would stay vector");
      }
    }
    if (!Changed)
      break;
  }
  if (Dropped.empty())
    return;
  std::vector<Split> Kept;
  SplitIndex.clear();
  for (Split &S : Splits)
    if (!Dropped.count(S.Old)) {
      SplitIndex[S.Old] = Kept.size();
      Kept.push_back(std::move(S));
    }
  Splits = std::move(Kept);
}

//===----------------------------------------------------------------------===//
// Expansion
//===----------------------------------------------------------------------===//

/// The part of candidate \p S at \p Path (which must name one of its
/// leaves), creating the parts of a select on first use.
Value *PhiDecomposer::candidatePart(Split &S, ArrayRef<unsigned> Path) {
  if (S.Parts.empty())
    materializeSelect(S);
  for (unsigned K = 0, E = S.Leaves.size(); K != E; ++K)
    if (ArrayRef<unsigned>(S.Leaves[K].Path) == Path)
      return S.Parts[K];
  llvm_unreachable("path does not name a leaf of the candidate");
}

/// The scalar element of \p V at \p Path, without new instructions where the
/// element is at hand: parts of candidates, elements of constants, operands
/// of the insertvalue/insertelement chains that built \p V, and the source
/// of an extractvalue of a sub-aggregate.
Value *PhiDecomposer::partOf(Value *V, ArrayRef<unsigned> Path, Type *LeafTy) {
  while (!Path.empty()) {
    if (auto *I = dyn_cast<Instruction>(V)) {
      auto It = SplitIndex.find(I);
      if (It != SplitIndex.end())
        return candidatePart(Splits[It->second], Path);
    }
    if (auto *C = dyn_cast<Constant>(V)) {
      Constant *E = C->getAggregateElement(Path.front());
      if (!E)
        break;
      V = E;
      Path = Path.drop_front();
      continue;
    }
    if (auto *IV = dyn_cast<InsertValueInst>(V)) {
      ArrayRef<unsigned> Idx = IV->getIndices();
      if (Path.size() >= Idx.size() && Path.take_front(Idx.size()) == Idx) {
        V = IV->getInsertedValueOperand();
        Path = Path.drop_front(Idx.size());
      } else {
        V = IV->getAggregateOperand();
      }
      continue;
    }
    if (auto *I = dyn_cast<Instruction>(V); I && LaneWise.count(I))
      return lanePart(*I, Path.front());
    if (auto *IE = dyn_cast<InsertElementInst>(V)) {
      auto *Lane = dyn_cast<ConstantInt>(IE->getOperand(2));
      if (!Lane)
        break;
      if (Lane->getZExtValue() == Path.front()) {
        V = IE->getOperand(1);
        Path = Path.drop_front();
      } else {
        V = IE->getOperand(0);
      }
      continue;
    }
    if (auto *EV = dyn_cast<ExtractValueInst>(V)) {
      IndexPath Full(EV->getIndices());
      Full.append(Path.begin(), Path.end());
      return partOf(EV->getAggregateOperand(), Full, LeafTy);
    }
    break;
  }
  if (Path.empty())
    return V;
  return extractPart(V, Path);
}

/// extractvalue/extractelement of \p V at \p Path, created once, right after
/// the definition of \p V (at the function entry for arguments).
Value *PhiDecomposer::extractPart(Value *V, ArrayRef<unsigned> Path) {
  auto Key = std::make_pair(V, std::vector<unsigned>(Path.begin(), Path.end()));
  auto It = Extracts.find(Key);
  if (It != Extracts.end())
    return It->second;

  // In element order: after the extracts already made for values defined
  // at the same point.
  Value *Anchor = isa<Instruction>(V) ? V : nullptr;
  BasicBlock::iterator Where = F.getEntryBlock().getFirstInsertionPt();
  if (auto It = LastExtract.find(Anchor); It != LastExtract.end()) {
    Where = std::next(It->second->getIterator());
  } else if (auto *I = dyn_cast<Instruction>(V)) {
    std::optional<BasicBlock::iterator> After = I->getInsertionPointAfterDef();
    assert(After && "legality keeps invoke and callbr results out");
    Where = *After;
  }
  IRBuilder<> B(Where->getParent(), Where);
  std::string Name = baseName(V, "agg") + ".x";
  Value *X;
  if (V->getType()->isVectorTy()) {
    assert(Path.size() == 1 && "a vector has one level");
    X = B.CreateExtractElement(V, B.getInt64(Path.front()),
                               Name + pathSuffix(Path));
  } else {
    X = B.CreateExtractValue(V, Path, Name + pathSuffix(Path));
  }
  Extracts[Key] = X;
  if (auto *XI = dyn_cast<Instruction>(X))
    LastExtract[Anchor] = XI;
  return X;
}

/// Lane \p Lane of the lane-wise vector instruction \p I, computed by one
/// scalar instruction in front of it (once).
Value *PhiDecomposer::lanePart(Instruction &I, unsigned Lane) {
  auto Key = std::make_pair(&I, Lane);
  if (auto It = Lanes.find(Key); It != Lanes.end())
    return It->second;
  Type *EltTy = cast<FixedVectorType>(I.getType())->getElementType();
  auto LaneOf = [&](Value *Op) -> Value * {
    auto *OT = dyn_cast<FixedVectorType>(Op->getType());
    if (!OT)
      return Op; // A scalar operand (a select's condition).
    return partOf(Op, {Lane}, OT->getElementType());
  };
  SmallVector<Value *, 4> Ops;
  if (auto *Call = dyn_cast<CallBase>(&I)) {
    // The arguments only: a call's last operand is its callee.
    for (Value *Arg : Call->args())
      Ops.push_back(LaneOf(Arg));
  } else if (!isa<LoadInst>(I)) {
    for (Value *Op : I.operands())
      Ops.push_back(LaneOf(Op));
  }
  IRBuilder<> B(&I);
  std::string Name = baseName(&I, "v") + ".lane" + std::to_string(Lane);
  Value *R;
  if (auto *BO = dyn_cast<BinaryOperator>(&I)) {
    R = B.CreateBinOp(BO->getOpcode(), Ops[0], Ops[1], Name);
  } else if (auto *UO = dyn_cast<UnaryOperator>(&I)) {
    R = B.CreateUnOp(UO->getOpcode(), Ops[0], Name);
  } else if (auto *Cmp = dyn_cast<CmpInst>(&I)) {
    R = B.CreateCmp(Cmp->getPredicate(), Ops[0], Ops[1], Name);
  } else if (isa<SelectInst>(I)) {
    R = B.CreateSelect(Ops[0], Ops[1], Ops[2], Name);
  } else if (auto *C = dyn_cast<CastInst>(&I)) {
    R = B.CreateCast(C->getOpcode(), Ops[0], EltTy, Name);
  } else if (auto *Ld = dyn_cast<LoadInst>(&I)) {
    uint64_t Offset = Lane * DL.getTypeStoreSize(EltTy).getFixedValue();
    Value *Ptr = Ld->getPointerOperand();
    if (Offset)
      Ptr = B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), Ptr, Offset,
                                         Name + ".addr");
    LoadInst *NewLd = B.CreateAlignedLoad(
        EltTy, Ptr, commonAlignment(Ld->getAlign(), Offset), Name);
    AAMDNodes AA = Ld->getAAMetadata();
    if (AA)
      NewLd->setAAMetadata(AA);
    R = NewLd;
  } else {
    auto *II = cast<IntrinsicInst>(&I);
    R = B.CreateIntrinsic(II->getIntrinsicID(), {EltTy}, Ops, nullptr, Name);
  }
  if (auto *RI = dyn_cast<Instruction>(R))
    RI->copyIRFlags(&I);
  ++NumLaneOps;
  Lanes[Key] = R;
  return R;
}

/// Creates one select per leaf in front of the select candidate \p S.
void PhiDecomposer::materializeSelect(Split &S) {
  auto *Sel = cast<SelectInst>(S.Old);
  // Parts first, so that a select feeding itself through a phi (impossible
  // without a phi, which already has its parts) never recurses here.
  SmallVector<Value *, 8> Parts;
  for (const Leaf &L : S.Leaves) {
    Value *T = partOf(Sel->getTrueValue(), L.Path, L.Ty);
    Value *E = partOf(Sel->getFalseValue(), L.Path, L.Ty);
    IRBuilder<> B(Sel);
    Parts.push_back(B.CreateSelect(Sel->getCondition(), T, E,
                                   baseName(Sel, "sel") + pathSuffix(L.Path),
                                   Sel));
    ++NumScalarParts;
  }
  S.Parts = std::move(Parts);
}

/// The aggregate of \p S rebuilt from its parts, once: after the phis of its
/// block for a phi, in place of the select for a select.
Value *PhiDecomposer::rebuild(Split &S) {
  if (S.Rebuilt)
    return S.Rebuilt;
  BasicBlock::iterator Where = isa<PHINode>(S.Old)
                                   ? S.Old->getParent()->getFirstInsertionPt()
                                   : S.Old->getIterator();
  IRBuilder<> B(Where->getParent(), Where);
  Value *Agg = PoisonValue::get(S.Old->getType());
  std::string Name = baseName(S.Old, "agg") + ".rebuilt";
  for (unsigned K = 0, E = S.Leaves.size(); K != E; ++K) {
    if (S.IsVector)
      Agg = B.CreateInsertElement(Agg, S.Parts[K],
                                  B.getInt64(S.Leaves[K].Path.front()), Name);
    else
      Agg = B.CreateInsertValue(Agg, S.Parts[K], S.Leaves[K].Path, Name);
  }
  ++NumRebuilt;
  S.Rebuilt = Agg;
  return Agg;
}

/// The sub-aggregate of \p S under \p Prefix, built from its parts in front
/// of \p Before (for an extractvalue of a nested aggregate).
Value *PhiDecomposer::rebuildSub(Split &S, ArrayRef<unsigned> Prefix, Type *Ty,
                                 Instruction *Before) {
  IRBuilder<> B(Before);
  Value *Agg = PoisonValue::get(Ty);
  for (unsigned K = 0, E = S.Leaves.size(); K != E; ++K) {
    ArrayRef<unsigned> P = S.Leaves[K].Path;
    if (P.size() <= Prefix.size() || P.take_front(Prefix.size()) != Prefix)
      continue;
    Agg = B.CreateInsertValue(Agg, S.Parts[K], P.drop_front(Prefix.size()),
                              baseName(S.Old, "agg") + ".sub");
  }
  return Agg;
}

/// Whether \p I is an insertvalue/insertelement whose value only reaches
/// candidates (the chain that builds a loop's next aggregate): the parts
/// took its elements, and it dies with the candidates.
bool PhiDecomposer::feedsOnlyCandidates(Instruction *I, unsigned Depth) {
  if (!isa<InsertValueInst>(I) && !isa<InsertElementInst>(I))
    return false;
  if (Depth > 32 || I->use_empty())
    return false;
  return all_of(I->users(), [&](User *U) {
    auto *UI = cast<Instruction>(U);
    return SplitIndex.count(UI) || feedsOnlyCandidates(UI, Depth + 1);
  });
}

/// Points every user of \p S outside the candidates at its parts (extracts)
/// or at the rebuilt aggregate (everything else).
void PhiDecomposer::rewriteUsers(Split &S) {
  SmallVector<Use *, 8> Uses;
  for (Use &U : S.Old->uses())
    Uses.push_back(&U);
  for (Use *U : Uses) {
    auto *User = cast<Instruction>(U->getUser());
    if (SplitIndex.count(User) || LaneWise.count(User) ||
        feedsOnlyCandidates(User))
      continue; // Wired part to part already; dies with the candidates.
    if (auto *EV = dyn_cast<ExtractValueInst>(User)) {
      ArrayRef<unsigned> Idx = EV->getIndices();
      Value *New = nullptr;
      for (unsigned K = 0, E = S.Leaves.size(); K != E && !New; ++K)
        if (ArrayRef<unsigned>(S.Leaves[K].Path) == Idx)
          New = S.Parts[K];
      if (!New)
        New = rebuildSub(S, Idx, EV->getType(), EV);
      ++S.ExtractUsers;
      EV->replaceAllUsesWith(New);
      EV->eraseFromParent();
      continue;
    }
    if (auto *EE = dyn_cast<ExtractElementInst>(User)) {
      if (auto *Lane = dyn_cast<ConstantInt>(EE->getIndexOperand());
          Lane && EE->getVectorOperand() == S.Old &&
          Lane->getValue().ult(S.Leaves.size())) {
        ++S.ExtractUsers;
        EE->replaceAllUsesWith(S.Parts[Lane->getZExtValue()]);
        EE->eraseFromParent();
        continue;
      }
    }
    ++S.OtherUsers;
    U->set(rebuild(S));
  }
}

/// Folds parts whose incoming values are all one value (ignoring the part
/// itself): a descriptor's base pointer or stride that is the same on every
/// path is then that value again, for SCEV and alias analysis.
void PhiDecomposer::foldParts(SmallVectorImpl<WeakTrackingVH> &Parts) {
  bool Changed = true;
  while (Changed) {
    Changed = false;
    for (WeakTrackingVH &VH : Parts) {
      auto *PN = dyn_cast_or_null<PHINode>(static_cast<Value *>(VH));
      if (!PN)
        continue;
      Value *Common = nullptr;
      bool Same = true;
      for (Value *In : PN->incoming_values()) {
        if (In == PN)
          continue;
        if (Common && In != Common) {
          Same = false;
          break;
        }
        Common = In;
      }
      if (!Same || !Common ||
          !accel::replacementKeepsLCSSA(*PN, Common, DT, LI))
        continue;
      LLVM_DEBUG(dbgs() << DEBUG_TYPE ": folded part " << *PN << "\n");
      PN->replaceAllUsesWith(Common);
      PN->eraseFromParent();
      ++NumPartsFolded;
      Changed = true;
    }
  }
}

void PhiDecomposer::remarkSplit(const Split &S) {
  ORE.emit([&] {
    bool IsPhi = isa<PHINode>(S.Old);
    OptimizationRemark R(DEBUG_TYPE, IsPhi ? "Decomposed" : "DecomposedSelect",
                         S.Old);
    R << "split " << (IsPhi ? "phi" : "select") << " of "
      << typeName(S.Old->getType()) << " into "
      << ore::NV("Parts", (unsigned)S.Leaves.size()) << " scalar "
      << (IsPhi ? "phis" : "selects") << " ("
      << ore::NV("ExtractUsers", S.ExtractUsers) << " extract users rewired, "
      << (S.Rebuilt ? "rebuilt once for " : "")
      << ore::NV("OtherUsers", S.OtherUsers) << " other users)";
    return R;
  });
}

bool PhiDecomposer::decompose() {
  collectCandidates();
  if (Splits.empty())
    return false;

  // 1. One empty scalar phi per leaf of every phi candidate.
  SmallVector<WeakTrackingVH, 16> NewPhis;
  for (Split &S : Splits) {
    auto *PN = dyn_cast<PHINode>(S.Old);
    if (!PN)
      continue;
    for (const Leaf &L : S.Leaves) {
      PHINode *Part = PHINode::Create(L.Ty, PN->getNumIncomingValues(),
                                      baseName(PN, "phi") + pathSuffix(L.Path),
                                      PN->getIterator());
      if (isa<FPMathOperator>(PN) && isa<FPMathOperator>(Part))
        Part->copyFastMathFlags(PN);
      S.Parts.push_back(Part);
      NewPhis.push_back(Part);
      ++NumScalarParts;
    }
  }

  // 2. Their incoming values, part by part.
  for (Split &S : Splits) {
    auto *PN = dyn_cast<PHINode>(S.Old);
    if (!PN)
      continue;
    for (unsigned K = 0, E = S.Leaves.size(); K != E; ++K) {
      auto *Part = cast<PHINode>(S.Parts[K]);
      for (unsigned In = 0, N = PN->getNumIncomingValues(); In != N; ++In)
        Part->addIncoming(
            partOf(PN->getIncomingValue(In), S.Leaves[K].Path, S.Leaves[K].Ty),
            PN->getIncomingBlock(In));
    }
  }
  // Selects nobody asked for yet.
  for (Split &S : Splits)
    if (S.Parts.empty())
      materializeSelect(S);

  // 3. Users outside the candidates, and constant-lane extracts of the
  // vector instructions computed lane by lane.
  for (Split &S : Splits)
    rewriteUsers(S);
  for (Instruction *I : LaneWise)
    for (User *U : make_early_inc_range(I->users()))
      if (auto *EE = dyn_cast<ExtractElementInst>(U)) {
        auto *Lane = cast<ConstantInt>(EE->getIndexOperand());
        if (Lane->getValue().uge(
                cast<FixedVectorType>(I->getType())->getNumElements()))
          continue; // Poison; left to InstCombine.
        EE->replaceAllUsesWith(lanePart(*I, Lane->getZExtValue()));
        EE->eraseFromParent();
      }

  // 4. The old phis and selects, and whatever only they used.
  SmallVector<WeakTrackingVH, 16> MaybeDead;
  for (Split &S : Splits) {
    remarkSplit(S);
    if (isa<PHINode>(S.Old))
      ++(S.IsVector ? NumVectorPhis : NumAggregatePhis);
    else
      ++NumSelects;
    for (Value *Op : S.Old->operands())
      if (isa<Instruction>(Op) && !SplitIndex.count(cast<Instruction>(Op)))
        MaybeDead.push_back(Op);
    S.Old->replaceAllUsesWith(PoisonValue::get(S.Old->getType()));
  }
  for (Split &S : Splits)
    S.Old->eraseFromParent();
  for (Instruction *I : LaneWise)
    MaybeDead.push_back(I);
  RecursivelyDeleteTriviallyDeadInstructionsPermissive(MaybeDead);

  // 5. Parts that are the same value on every path.
  foldParts(NewPhis);
  return true;
}

bool PhiDecomposer::run() {
  bool Changed = decompose();
  if (Opts.Anchors)
    Changed |= accel::anchorShapes(F, DT, LI, AC, ORE);
  return Changed;
}

} // namespace

PreservedAnalyses AccelPhiDecomposePass::run(Function &F,
                                             FunctionAnalysisManager &AM) {
  // Nothing to do without a phi or select of an aggregate or vector, or an
  // integer phi an anchor could be stated at.
  bool Interesting = false;
  for (BasicBlock &BB : F) {
    for (PHINode &PN : BB.phis())
      if (isAggregate(PN.getType()) || PN.getType()->isVectorTy() ||
          (Opts.Anchors && PN.getType()->isIntOrPtrTy()))
        Interesting = true;
    if (!Interesting)
      for (Instruction &I : BB)
        if (isa<SelectInst>(I) && isAggregate(I.getType()))
          Interesting = true;
    if (Interesting)
      break;
  }
  if (!Interesting)
    return PreservedAnalyses::all();

  auto &DT = AM.getResult<DominatorTreeAnalysis>(F);
  auto &LI = AM.getResult<LoopAnalysis>(F);
  auto &AC = AM.getResult<AssumptionAnalysis>(F);
  auto &TTI = AM.getResult<TargetIRAnalysis>(F);
  auto &ORE = AM.getResult<OptimizationRemarkEmitterAnalysis>(F);
  PhiDecomposer D(F, Opts, DT, LI, AC, TTI, ORE);
  if (!D.run())
    return PreservedAnalyses::all();
  PreservedAnalyses PA;
  PA.preserveSet<CFGAnalyses>();
  PA.preserve<AssumptionAnalysis>();
  return PA;
}
