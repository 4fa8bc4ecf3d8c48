// The compile pipeline is registered once (passes/CompilePipeline.cpp): `disagmoe-opt
// --disagmoe-compile` runs the stages `disagmoe compile` runs, in the same order, with the same
// option checks. Oracle: the same passes spelled one by one (tests/lit/placement/place-groups.mlir).
// RUN: disagmoe-opt --disagmoe-compile="start-after=raise stop-after=placement groups=2 attn-ranks=1 ffn-ranks=3" %inputs/raised-2layer.mlir | FileCheck %s --check-prefix=G2
// RUN: disagmoe-opt --partition-components --assign-groups=p=2 --fuse-exchange --place-groups="attn-ranks=1 ffn-ranks=3" %inputs/raised-2layer.mlir | FileCheck %s --check-prefix=G2
// RUN: disagmoe-opt --disagmoe-compile="start-after=raise stop-after=placement groups=2" --dump-pass-pipeline %inputs/raised-2layer.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPE
// RUN: disagmoe-opt --disagmoe-compile="start-after=raise" --dump-pass-pipeline %inputs/raised-2layer.mlir 2>&1 | FileCheck %s --check-prefix=ALL
// RUN: not disagmoe-opt --disagmoe-compile="groups=0" %inputs/raised-2layer.mlir 2>&1 | FileCheck %s --check-prefix=GROUPS
// RUN: not disagmoe-opt --disagmoe-compile="dense-side=gpu" %inputs/raised-2layer.mlir 2>&1 | FileCheck %s --check-prefix=SIDE
// RUN: not disagmoe-opt --disagmoe-compile="stop-after=bogus" %inputs/raised-2layer.mlir 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not disagmoe-opt --disagmoe-compile="micro-batches=5000" %inputs/raised-2layer.mlir 2>&1 | FileCheck %s --check-prefix=MB
// `disagmoe compile` refuses the same values with the same words, before loading the model.
// RUN: not disagmoe compile %inputs/does-not-exist.onnx -o %t --groups 0 2>&1 | FileCheck %s --check-prefix=CLI-GROUPS
// RUN: not disagmoe compile %inputs/does-not-exist.onnx -o %t --dense-side gpu 2>&1 | FileCheck %s --check-prefix=CLI-SIDE

// G2: moe.placement = {attn_ranks = 1 : i64, expert_to_rank = {{\[}}[2, 2, 3, 4], [5, 5, 6, 7]], ffn_ranks = 3 : i64, num_groups = 2 : i64, world_size = 8 : i64}

// PIPE: builtin.module(partition-components,assign-groups{{[{]}}{{.*}}p=2{{.*}}},fuse-exchange,place-groups{{[{]}}attn-ranks=2 ffn-ranks=2 routing-profile=})

// The schedule stage ends with its verifier.
// ALL: builtin.module(partition-components,assign-groups{{.*}},fuse-exchange,place-groups{{.*}},exchange-volume{{.*}},afpipe-schedule{{.*}},afpipe-verify)

// GROUPS: error: disagmoe-compile: groups must be in [1, 65536], got 0
// SIDE: error: disagmoe-compile: dense-side must be attention or ffn, got 'gpu'
// STAGE: error: disagmoe-compile: stop-after 'bogus' is not a stage (expected import, normalize, fold, raise, partition, groups, exchange, placement, volume, schedule)
// MB: error: disagmoe-compile: micro-batches must be in [2p, 4096] (0: 2p), got 5000
// CLI-GROUPS: disagmoe compile: --groups must be in [1, 65536], got 0
// CLI-SIDE: disagmoe compile: --dense-side must be attention or ffn, got 'gpu'
