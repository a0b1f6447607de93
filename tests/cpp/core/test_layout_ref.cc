// detail::LayoutRef: shared ownership of a tensor's layout, counted unless the
// layout is immortal (include/collie/tensor.h).
#include <gtest/gtest.h>

#include <thread>
#include <utility>
#include <vector>

#include "collie/tensor.h"

namespace collie::detail {
namespace {

// A layout made as tensor.cc makes one: with new, its one owner counted.
const TensorLayout* new_layout(bool immortal) {
  auto* layout = new TensorLayout();
  layout->shape = {2, 3};
  layout->strides = {3, 1};
  layout->numel = 6;
  layout->immortal = immortal;
  return layout;
}

int64_t owners(const LayoutRef& ref) { return ref->owners.load(); }

TEST(LayoutRef, CopiesOfACountedLayoutCountAndTheLastOwnerFreesIt) {
  LayoutRef first(new_layout(/*immortal=*/false));
  EXPECT_EQ(owners(first), 1);
  {
    LayoutRef copy = first;
    LayoutRef assigned;
    assigned = copy;
    EXPECT_EQ(copy.get(), first.get());
    EXPECT_EQ(owners(first), 3);
  }
  EXPECT_EQ(owners(first), 1);
  // Moving hands the ownership over without counting.
  LayoutRef moved = std::move(first);
  EXPECT_EQ(first.get(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(owners(moved), 1);
  // Assigning over the last owner frees the old layout (AddressSanitizer would
  // report a leak or a double free otherwise).
  moved = LayoutRef(new_layout(false));
  EXPECT_EQ(owners(moved), 1);
}

TEST(LayoutRef, AssigningALayoutToItsLastOwnerKeepsIt) {
  LayoutRef only(new_layout(false));
  const TensorLayout* layout = only.get();
  const LayoutRef& alias = only;
  only = alias;
  ASSERT_EQ(only.get(), layout);
  EXPECT_EQ(owners(only), 1);
  EXPECT_EQ(only->numel, 6);  // still there (AddressSanitizer: not freed)
}

TEST(LayoutRef, ImmortalLayoutsAreNeitherCountedNorFreed) {
  static const TensorLayout* const layout = new_layout(/*immortal=*/true);  // for the process
  {
    LayoutRef a(layout);
    LayoutRef b = a;
    LayoutRef c;
    c = b;
    EXPECT_EQ(owners(a), 1);
    EXPECT_EQ(c.get(), layout);
  }
  // Every reference dropped, the layout is still there (not freed: no owner was
  // counted, so none could be the last).
  EXPECT_EQ(layout->owners.load(), 1);
  EXPECT_EQ(layout->shape, (Shape{2, 3}));
}

TEST(LayoutRef, ThreadsCopyingAndDroppingOneLayoutLeaveItsCountRight) {
  LayoutRef shared(new_layout(false));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&shared] {
      for (int i = 0; i < 20000; ++i) {
        LayoutRef copy = shared;
        LayoutRef another = copy;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(owners(shared), 1);
}

TEST(LayoutRef, TensorsOfOneShapeShareALayoutAcrossCopiesAndThreads) {
  // What tensors see: copies and outputs of a shape made over and over, on
  // several threads, keep their shapes (a layout freed too early would be a
  // use after free under AddressSanitizer, a wrong count a race under TSan).
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &ok] {
      Tensor keep = Tensor::zeros({3, static_cast<int64_t>(t) + 1});
      for (int i = 0; i < 2000; ++i) {
        Tensor made = Tensor::uninitialized_like(keep);
        Tensor copy = made;
        Tensor view = copy.reshape({-1});
        keep = copy;
        if (view.numel() != 3 * (t + 1) || keep.shape() != Shape({3, t + 1})) return;
      }
      ok[static_cast<size_t>(t)] = 1;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, std::vector<int>(4, 1));
}

}  // namespace
}  // namespace collie::detail
