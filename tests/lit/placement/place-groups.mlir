// RUN: disagmoe-opt --partition-components --assign-groups=p=1 --fuse-exchange --place-groups="attn-ranks=2 ffn-ranks=2" %inputs/raised-2layer.mlir | FileCheck %s --check-prefix=G1
// RUN: disagmoe-opt --partition-components --assign-groups=p=2 --fuse-exchange --place-groups="attn-ranks=1 ffn-ranks=3" %inputs/raised-2layer.mlir | FileCheck %s --check-prefix=G2
// RUN: not disagmoe-opt --partition-components --assign-groups --fuse-exchange --place-groups="attn-ranks=1 ffn-ranks=5" %inputs/raised-2layer.mlir 2>&1 | FileCheck %s --check-prefix=TOO-MANY
// RUN: not disagmoe-opt --place-groups %inputs/raised-2layer.mlir 2>&1 | FileCheck %s --check-prefix=UNFUSED
// Attention groups take ranks 0 .. p*A-1, FFN groups follow; expert e of layer l sits on F-rank
// e * F / E of group l mod p (contiguous split).

// G1: moe.placement = {attn_ranks = 2 : i64, expert_to_rank = {{\[}}[2, 2, 3, 3], [2, 2, 3, 3]], ffn_ranks = 2 : i64, num_groups = 1 : i64, world_size = 4 : i64}

// 4 experts over 3 F-ranks: floor(e * 3 / 4) = 0, 0, 1, 2; group 1's F-ranks start at 2*1 + 3.
// G2: moe.placement = {attn_ranks = 1 : i64, expert_to_rank = {{\[}}[2, 2, 3, 4], [5, 5, 6, 7]], ffn_ranks = 3 : i64, num_groups = 2 : i64, world_size = 8 : i64}

// TOO-MANY: error: ffn-ranks 5 exceeds the 4 experts of layer 0: an F-rank would hold no expert
// UNFUSED: error: place-groups needs the groups assigned first
