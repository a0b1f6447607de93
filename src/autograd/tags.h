// Point-to-point tags of collie's own traffic (see kReservedTagBase in collie/comm_ext.h).
//
// Messages are matched by (source, group, tag) in order, so traffic that must never pair
// with other traffic gets its own tags: gradients of user send/recv travel on
// kGradTagBase + the user's tag (user tags of differentiable p2p are below
// kMaxDifferentiableTag), and each neighbour exchange direction has a forward and a
// backward tag. A training step's backward therefore never consumes the next step's
// forward messages, nor the reverse.
#pragma once

#include "collie/autograd.h"
#include "collie/comm_ext.h"

namespace collie::autograd::detail {

inline constexpr int kGradTagBase = kReservedTagBase;              // + user tag
inline constexpr int kNeighborTag = kReservedTagBase + (1 << 29);  // NeighborExchange forward
inline constexpr int kNeighborGradTag = kNeighborTag + 1;          // its backward
inline constexpr int kHaloTag = kNeighborTag + 16;                 // + direction (0..7)
inline constexpr int kHaloGradTag = kNeighborTag + 32;             // + direction (0..7)

// The tag a gradient message of user tag `tag` uses; ValueError outside
// [0, kMaxDifferentiableTag).
int grad_tag(int tag, const char* op);

}  // namespace collie::autograd::detail
