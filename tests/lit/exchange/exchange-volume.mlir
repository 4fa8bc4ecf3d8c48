// RUN: disagmoe-opt --partition-components --assign-groups=p=2 --fuse-exchange --place-groups="attn-ranks=2 ffn-ranks=2" --exchange-volume %inputs/raised-2layer.mlir | FileCheck %s --check-prefix=P2
// RUN: disagmoe-opt --partition-components --assign-groups --fuse-exchange --place-groups="attn-ranks=1 ffn-ranks=1" --exchange-volume="bytes-per-element=2" %inputs/raised-2layer.mlir | FileCheck %s --check-prefix=ONE
// RUN: not disagmoe-opt --partition-components --assign-groups --fuse-exchange --exchange-volume %inputs/raised-2layer.mlir 2>&1 | FileCheck %s --check-prefix=UNPLACED
// Expected bytes per micro-batch under uniform routing. The test model: T = 6 tokens, H = 8,
// E = 4 experts, top-2.
//
// 2 F-ranks with 2 experts each: P(rank hit) = 1 - C(2,2)/C(4,2) = 5/6, E[D] = 5/3;
// fp32 copy = 32 bytes: M2N = N2M = 6 * 5/3 * 32 = 320; residual (p = 2: crosses groups) = 192;
// all-to-all = 2 * 6 * 2 * 32 = 768; ratio = (320 + 320 + 192) / 768 = 1.0833.
// P2: moe.m2n {{.*}}layer = 0 {{.*}}volume = {all_to_all_bytes = 7.680000e+02 : f64, destinations_per_token = 1.6666666666666667 : f64, m2n_bytes = 3.200000e+02 : f64, n2m_bytes = 3.200000e+02 : f64, ratio = 1.0833333333333333 : f64, residual_bytes = 1.920000e+02 : f64}
//
// 1 F-rank holding all 4 experts: E[D] = 1, so M2N is 1/k of the dispatch; bf16 copy = 16 bytes:
// M2N = N2M = 6 * 16 = 96, all-to-all = 2 * 6 * 2 * 16 = 384, residual stays on its rank (p = 1).
// ONE: moe.m2n {{.*}}volume = {all_to_all_bytes = 3.840000e+02 : f64, destinations_per_token = 1.000000e+00 : f64, m2n_bytes = 9.600000e+01 : f64, n2m_bytes = 9.600000e+01 : f64, ratio = 5.000000e-01 : f64, residual_bytes = 0.000000e+00 : f64}
//
// UNPLACED: error: exchange-volume needs a placed module (run place-groups first)
