/* model/backend.c — the attention-backend table: names, families, the devices each kernel is
 * built for, and vLLM's AUTO choice per platform (see backend.h for the rules and sources). */
#include "backend.h"

#include <stdio.h>
#include <string.h>

/* Arch ranges: a kernel runs on [lo, hi] of its platform; NET_ARCH_UNKNOWN bounds mean "any".
 * A device whose arch is not recorded passes the platform check only. */
typedef struct {
    const char *name;
    ModelBackendFamily family;
    uint32_t platforms; /* bit per NetPlatform */
    NetArch lo, hi;
} BackendInfo;

#define P(x) (1u << NET_PLATFORM_##x)

static const BackendInfo table[MODEL_BACKEND_COUNT] = {
    [MODEL_BACKEND_AUTO] = {"AUTO", MODEL_BFAMILY_NONE, ~0u, NET_ARCH_UNKNOWN, NET_ARCH_UNKNOWN},
    /* FlashInfer's trtllm-gen MLA kernels are Blackwell-only (flashinfer_mla*.py: capability 10) */
    [MODEL_BACKEND_FLASHINFER_MLA_SPARSE] = {"FLASHINFER_MLA_SPARSE", MODEL_BFAMILY_MLA_SPARSE,
                                             P(CUDA), NET_ARCH_SM100, NET_ARCH_SM103},
    /* FlashMLA: Hopper and Blackwell (flashmla.py is_flashmla_supported) */
    [MODEL_BACKEND_FLASHMLA_SPARSE] = {"FLASHMLA_SPARSE", MODEL_BFAMILY_MLA_SPARSE, P(CUDA),
                                       NET_ARCH_SM90, NET_ARCH_SM103},
    [MODEL_BACKEND_FLASHMLA] = {"FLASHMLA", MODEL_BFAMILY_MLA, P(CUDA), NET_ARCH_SM90,
                                NET_ARCH_SM103},
    [MODEL_BACKEND_FLASHINFER_MLA] = {"FLASHINFER_MLA", MODEL_BFAMILY_MLA, P(CUDA),
                                      NET_ARCH_SM100, NET_ARCH_SM103},
    [MODEL_BACKEND_TRITON_MLA] = {"TRITON_MLA", MODEL_BFAMILY_MLA, P(CUDA) | P(ROCM),
                                  NET_ARCH_UNKNOWN, NET_ARCH_UNKNOWN},
    /* FlashAttention 2/3: Ampere and newer; vLLM's XPU platform runs it through IPEX */
    [MODEL_BACKEND_FLASH_ATTN] = {"FLASH_ATTN", MODEL_BFAMILY_GQA, P(CUDA) | P(XPU), NET_ARCH_SM80,
                                  NET_ARCH_SM120},
    [MODEL_BACKEND_ASCEND] = {"ASCEND", MODEL_BFAMILY_ASCEND, P(NPU), NET_ARCH_UNKNOWN,
                              NET_ARCH_UNKNOWN},
    /* CUTLASS MLA: sm100 (cutlass_mla.py) */
    [MODEL_BACKEND_CUTLASS_MLA] = {"CUTLASS_MLA", MODEL_BFAMILY_MLA, P(CUDA), NET_ARCH_SM100,
                                   NET_ARCH_SM103},
    /* FlashAttention-3 MLA: Hopper */
    [MODEL_BACKEND_FLASH_ATTN_MLA] = {"FLASH_ATTN_MLA", MODEL_BFAMILY_MLA, P(CUDA), NET_ARCH_SM90,
                                      NET_ARCH_SM90},
    [MODEL_BACKEND_FLASHINFER] = {"FLASHINFER", MODEL_BFAMILY_GQA, P(CUDA), NET_ARCH_UNKNOWN,
                                  NET_ARCH_UNKNOWN},
    [MODEL_BACKEND_TRITON_ATTN] = {"TRITON_ATTN", MODEL_BFAMILY_GQA, P(CUDA) | P(ROCM) | P(XPU),
                                   NET_ARCH_UNKNOWN, NET_ARCH_UNKNOWN},
    [MODEL_BACKEND_FLEX_ATTENTION] = {"FLEX_ATTENTION", MODEL_BFAMILY_GQA,
                                      P(CUDA) | P(ROCM) | P(XPU), NET_ARCH_UNKNOWN,
                                      NET_ARCH_UNKNOWN},
    [MODEL_BACKEND_ROCM_ATTN] = {"ROCM_ATTN", MODEL_BFAMILY_GQA, P(ROCM), NET_ARCH_UNKNOWN,
                                 NET_ARCH_UNKNOWN},
    /* AITER kernels: CDNA3 and CDNA4 (gfx942, gfx950) */
    [MODEL_BACKEND_ROCM_AITER_FA] = {"ROCM_AITER_FA", MODEL_BFAMILY_GQA, P(ROCM), NET_ARCH_GFX942,
                                     NET_ARCH_GFX950},
    [MODEL_BACKEND_ROCM_AITER_UNIFIED_ATTN] = {"ROCM_AITER_UNIFIED_ATTN", MODEL_BFAMILY_GQA,
                                               P(ROCM), NET_ARCH_GFX942, NET_ARCH_GFX950},
    [MODEL_BACKEND_ROCM_AITER_MLA] = {"ROCM_AITER_MLA", MODEL_BFAMILY_MLA, P(ROCM),
                                      NET_ARCH_GFX942, NET_ARCH_GFX950},
    [MODEL_BACKEND_ROCM_AITER_TRITON_MLA] = {"ROCM_AITER_TRITON_MLA", MODEL_BFAMILY_MLA, P(ROCM),
                                             NET_ARCH_GFX942, NET_ARCH_GFX950},
    [MODEL_BACKEND_ROCM_AITER_MLA_SPARSE] = {"ROCM_AITER_MLA_SPARSE", MODEL_BFAMILY_MLA_SPARSE,
                                             P(ROCM), NET_ARCH_GFX942, NET_ARCH_GFX950},
    [MODEL_BACKEND_HPU_ATTN] = {"HPU_ATTN", MODEL_BFAMILY_GQA, P(HPU), NET_ARCH_UNKNOWN,
                                NET_ARCH_UNKNOWN},
};

const char *model_backend_name(ModelBackend b)
{
    return (unsigned)b < MODEL_BACKEND_COUNT ? table[b].name : "?";
}

bool model_backend_parse(const char *s, ModelBackend *out)
{
    g_return_val_if_fail(s != NULL && out != NULL, false);
    for (int i = 0; i < MODEL_BACKEND_COUNT; i++)
        if (g_ascii_strcasecmp(s, table[i].name) == 0) {
            *out = (ModelBackend)i;
            return true;
        }
    return false;
}

ModelBackendFamily model_backend_family(ModelBackend b)
{
    return (unsigned)b < MODEL_BACKEND_COUNT ? table[b].family : MODEL_BFAMILY_NONE;
}

static NetPlatform platform_of(const NetHardware *hw)
{
    return hw ? hw->platform : NET_PLATFORM_CUDA;
}

static NetArch arch_of(const NetHardware *hw)
{
    return hw ? hw->arch : NET_ARCH_SM90;
}

static bool blackwell(NetArch x)
{
    return x == NET_ARCH_SM100 || x == NET_ARCH_SM103;
}

/* Hopper or newer datacenter CUDA (FlashMLA's range). */
static bool hopper_plus(NetArch x)
{
    return x == NET_ARCH_SM90 || blackwell(x);
}

/* What the architecture needs from a backend. */
static ModelBackendFamily family_needed(const ModelArch *a)
{
    if (a->dsv4) /* FlashMLA sparse kernels over its fp8_ds_mla caches */
        return MODEL_BFAMILY_MLA_SPARSE;
    return a->mla ? (a->dsa ? MODEL_BFAMILY_MLA_SPARSE : MODEL_BFAMILY_MLA) : MODEL_BFAMILY_GQA;
}

static ModelBackend auto_choice(const ModelArch *a, const NetHardware *hw,
                                const ModelBackendQuery *q)
{
    NetPlatform p = platform_of(hw);
    NetArch x = arch_of(hw);
    ModelBackendFamily f = family_needed(a);
    switch (p) {
    case NET_PLATFORM_NPU:
        return MODEL_BACKEND_ASCEND;
    case NET_PLATFORM_HPU:
        return MODEL_BACKEND_HPU_ATTN;
    case NET_PLATFORM_ROCM:
        /* rocm.py: sparse -> ROCM_AITER_MLA_SPARSE; MLA -> ROCM_AITER_MLA when AITER is
         * enabled (VLLM_ROCM_USE_AITER=1, off by default) else TRITON_MLA; GQA -> ROCM_ATTN */
        return f == MODEL_BFAMILY_MLA_SPARSE ? MODEL_BACKEND_ROCM_AITER_MLA_SPARSE
               : f == MODEL_BFAMILY_MLA
                   ? (q && q->rocm_aiter ? MODEL_BACKEND_ROCM_AITER_MLA : MODEL_BACKEND_TRITON_MLA)
                   : MODEL_BACKEND_ROCM_ATTN;
    case NET_PLATFORM_XPU:
        return f == MODEL_BFAMILY_GQA ? MODEL_BACKEND_FLASH_ATTN : MODEL_BACKEND_TRITON_MLA;
    case NET_PLATFORM_CUDA:
    case NET_PLATFORM_COUNT:
        break;
    }
    if (f == MODEL_BFAMILY_MLA_SPARSE) {
        if (a->dsv4) /* deepseek_v4_attention.py: DeepseekV4FlashMLASparseBackend only */
            return MODEL_BACKEND_FLASHMLA_SPARSE;
        if (blackwell(x)) {
            /* FlashInfer's sparse kernel is rejected for PCP + DCP (seed 004); it is preferred
             * for an fp8 KV cache or few heads (cuda.py, vllm#35807) */
            if (q && q->pcp > 1 && q->dcp > 1)
                return MODEL_BACKEND_FLASHMLA_SPARSE;
            if (q && (q->kv_fp8 || q->heads_per_rank <= 16))
                return MODEL_BACKEND_FLASHINFER_MLA_SPARSE;
        }
        return MODEL_BACKEND_FLASHMLA_SPARSE;
    }
    if (f == MODEL_BFAMILY_MLA) {
        if (blackwell(x))
            return a->qk_nope_head_dim == 128 && (!q || q->dcp <= 1) ? MODEL_BACKEND_FLASHINFER_MLA
                                                                     : MODEL_BACKEND_CUTLASS_MLA;
        return hopper_plus(x) ? MODEL_BACKEND_FLASHMLA : MODEL_BACKEND_TRITON_MLA;
    }
    return blackwell(x) ? MODEL_BACKEND_FLASHINFER : MODEL_BACKEND_FLASH_ATTN;
}

/* A GQA backend named for an MLA model: the MLA kernel of the same library on this device. */
static ModelBackend mla_counterpart(ModelBackend b, const NetHardware *hw)
{
    NetArch x = arch_of(hw);
    switch (b) {
    case MODEL_BACKEND_TRITON_ATTN:
    case MODEL_BACKEND_FLEX_ATTENTION:
    case MODEL_BACKEND_ROCM_ATTN:
        return MODEL_BACKEND_TRITON_MLA;
    case MODEL_BACKEND_ROCM_AITER_FA:
    case MODEL_BACKEND_ROCM_AITER_UNIFIED_ATTN:
        return MODEL_BACKEND_ROCM_AITER_MLA;
    case MODEL_BACKEND_FLASHINFER:
        return blackwell(x) ? MODEL_BACKEND_FLASHINFER_MLA : MODEL_BACKEND_TRITON_MLA;
    case MODEL_BACKEND_FLASH_ATTN:
        return x == NET_ARCH_SM90 ? MODEL_BACKEND_FLASH_ATTN_MLA : MODEL_BACKEND_TRITON_MLA;
    default:
        return b;
    }
}

ModelBackend model_backend_resolve(const ModelArch *a, ModelBackend b, const NetHardware *hw,
                                   const ModelBackendQuery *q, bool *renamed)
{
    g_return_val_if_fail(a != NULL, b);
    if (renamed)
        *renamed = false;
    if (b == MODEL_BACKEND_AUTO)
        return auto_choice(a, hw, q);
    if (a->mla && !a->dsa && model_backend_family(b) == MODEL_BFAMILY_GQA) {
        ModelBackend m = mla_counterpart(b, hw);
        if (renamed)
            *renamed = m != b;
        return m;
    }
    return b;
}

/* Whether the kernel is built for `hw`; a NULL device (no hardware given) passes. */
static bool runs_on(const BackendInfo *bi, const NetHardware *hw)
{
    if (!hw)
        return true;
    NetPlatform p = platform_of(hw);
    if (!(bi->platforms & (1u << p)))
        return false;
    NetArch x = hw ? hw->arch : NET_ARCH_UNKNOWN;
    if (x == NET_ARCH_UNKNOWN || bi->lo == NET_ARCH_UNKNOWN)
        return true;
    return x >= bi->lo && x <= bi->hi && net_arch_platform(x) == p;
}

/* Whether backend `b` serves attention of family `need`. */
static bool family_fits(ModelBackendFamily have, ModelBackendFamily need)
{
    return have == need || have == MODEL_BFAMILY_ASCEND;
}

bool model_backend_check(ModelBackend b, const ModelArch *a, const NetHardware *hw, char *why,
                         size_t n)
{
    g_return_val_if_fail(a != NULL && why != NULL, false);
    if (b == MODEL_BACKEND_AUTO)
        return true;
    const BackendInfo *bi = &table[b];
    ModelBackendFamily need = family_needed(a);
    bool fits = family_fits(bi->family, need);
    bool device = runs_on(bi, hw);
    if (fits && device)
        return true;
    GString *valid = g_string_new(NULL);
    for (int i = 1; i < MODEL_BACKEND_COUNT; i++)
        if (family_fits(table[i].family, need) && runs_on(&table[i], hw))
            g_string_append_printf(valid, "%s, ", table[i].name);
    if (valid->len == 0) {
        /* nothing runs this attention here (e.g. sparse MLA on an A100): say so, not "AUTO" */
        static const char *const kinds[] = {"", "grouped-query attention", "MLA", "sparse MLA",
                                            ""};
        snprintf(why, n,
                 "no attention backend runs %s on %s (%s, %s): %s needs a kernel that is not "
                 "built for this device (vLLM has none either); use another device",
                 kinds[need], hw ? hw->name : "this device", net_platform_name(platform_of(hw)),
                 hw && hw->arch != NET_ARCH_UNKNOWN ? net_arch_name(hw->arch) : "arch not given",
                 a->name);
        g_string_free(valid, TRUE);
        return false;
    }
    g_string_append(valid, "AUTO");
    static const char *const what[] = {"", "grouped-query attention", "MLA",
                                       "sparse MLA (a DSA indexer)", ""};
    if (!fits)
        snprintf(why, n,
                 "attention backend %s is a %s kernel; %s uses %s (valid for it%s%s: %s)",
                 bi->name, bi->family == MODEL_BFAMILY_GQA ? "grouped-query attention"
                           : bi->family == MODEL_BFAMILY_MLA ? "dense MLA" : "sparse MLA",
                 a->name, what[need], hw ? " on " : "", hw ? hw->name : "", valid->str);
    else
        snprintf(why, n,
                 "attention backend %s does not run on %s (%s, %s); valid there for %s: %s",
                 bi->name, hw ? hw->name : "this device", net_platform_name(platform_of(hw)),
                 hw && hw->arch != NET_ARCH_UNKNOWN ? net_arch_name(hw->arch) : "arch not given",
                 a->name, valid->str);
    g_string_free(valid, TRUE);
    return false;
}

const char *model_backend_family_name(ModelBackendFamily f)
{
    switch (f) {
    case MODEL_BFAMILY_GQA:
        return "GQA";
    case MODEL_BFAMILY_MLA:
        return "MLA";
    case MODEL_BFAMILY_MLA_SPARSE:
        return "sparse MLA";
    case MODEL_BFAMILY_ASCEND:
        return "vLLM-Ascend";
    case MODEL_BFAMILY_NONE:
        break;
    }
    return "";
}

const char *model_backend_devices(ModelBackend b, char *buf, size_t n)
{
    g_assert(buf != NULL && n > 0);
    buf[0] = '\0';
    if ((unsigned)b >= MODEL_BACKEND_COUNT || b == MODEL_BACKEND_AUTO) {
        g_strlcpy(buf, "any (vLLM's choice per platform)", n);
        return buf;
    }
    const BackendInfo *bi = &table[b];
    GString *s = g_string_new(NULL);
    for (int p = 0; p < NET_PLATFORM_COUNT; p++)
        if (bi->platforms & (1u << p))
            g_string_append_printf(s, "%s%s", s->len ? ", " : "", net_platform_name((NetPlatform)p));
    if (bi->lo != NET_ARCH_UNKNOWN)
        g_string_append_printf(s, " %s-%s", net_arch_name(bi->lo), net_arch_name(bi->hi));
    g_strlcpy(buf, s->str, n);
    g_string_free(s, TRUE);
    return buf;
}
