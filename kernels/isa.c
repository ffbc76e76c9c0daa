/* SPDX-License-Identifier: MIT */
/* Run-time ISA detection (CPUID + XGETBV), ISA names and parsing. */
#include "kernels_int.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* XCR0: which register states the OS saves on a context switch. */
static uint64_t isa_xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

bkm_isa_t bkm_kern_isa_detect(void)
{
    unsigned int a, b, c, d;
    uint64_t xcr0;
    int fma, avx2, avx512;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return BKM_ISA_GENERIC;
    /* OSXSAVE (ECX bit 27) and AVX (bit 28) are needed before XGETBV and any YMM state. */
    if (!(c & (1u << 27)) || !(c & (1u << 28)))
        return BKM_ISA_GENERIC;
    fma = (c >> 12) & 1u;
    xcr0 = isa_xgetbv0();
    if ((xcr0 & 0x6) != 0x6) /* SSE + AVX state */
        return BKM_ISA_GENERIC;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return BKM_ISA_GENERIC;
    avx2 = (b >> 5) & 1u;
    /* AVX-512 F, DQ, BW, VL (EBX bits 16, 17, 30, 31) and opmask + ZMM state (XCR0 bits 5-7). */
    avx512 = ((b >> 16) & 1u) && ((b >> 17) & 1u) && ((b >> 30) & 1u) && ((b >> 31) & 1u) &&
             (xcr0 & 0xe0) == 0xe0;
    if (avx512 && avx2 && fma)
        return BKM_ISA_AVX512;
    if (avx2 && fma)
        return BKM_ISA_AVX2;
    return BKM_ISA_GENERIC;
}
#else
bkm_isa_t bkm_kern_isa_detect(void)
{
    return BKM_ISA_GENERIC;
}
#endif

const char *bkm_kern_isa_name(bkm_isa_t isa)
{
    switch (isa) {
    case BKM_ISA_AUTO: return "auto";
    case BKM_ISA_GENERIC: return "generic";
    case BKM_ISA_AVX2: return "avx2";
    case BKM_ISA_AVX512: return "avx512";
    default: return "unknown";
    }
}

int bkm_kern_isa_parse(const char *name, bkm_isa_t *isa, bkm_err_t *err)
{
    static const bkm_isa_t all[] = {BKM_ISA_AUTO, BKM_ISA_GENERIC, BKM_ISA_AVX2, BKM_ISA_AVX512};
    bkm_isa_t best;
    size_t i;
    if (name == NULL || isa == NULL)
        return bkm_err_set(err, BKM_EINVAL, "isa_parse: NULL argument");
    best = bkm_kern_isa_detect();
    for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (strcmp(name, bkm_kern_isa_name(all[i])) != 0)
            continue;
        if (all[i] == BKM_ISA_AUTO) {
            *isa = best;
            return BKM_OK;
        }
        /* The enum is ordered: a higher value needs everything a lower one needs. */
        if ((int)all[i] > (int)best)
            return bkm_err_set(err, BKM_ENOTSUP, "isa=%s is not supported by this CPU (best: %s)", name,
                               bkm_kern_isa_name(best));
        *isa = all[i];
        return BKM_OK;
    }
    return bkm_err_set(err, BKM_EINVAL, "isa='%s' is unknown (expected auto, generic, avx2 or avx512)", name);
}
