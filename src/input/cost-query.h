/* src/input/cost-query.h — one kernel or collective to price: `KIND key=value ...`, as
 * `ranksim cost` takes it on the command line and the validation fixtures
 * (the `args` column of the CSV files in tests/data/times/) write it.
 *
 * Kinds and keys (doc/cli.md, "ranksim cost"):
 *   gemm        m n k dtype [graph]
 *   attention   phase=prefill batch seqlen heads kv_heads head_dim [cached] [causal] [window]
 *               [kv_dtype] [kernel] [graph] [l2] [v_head_dim] [mla] [topk] [kv_layout]
 *               phase=decode batch context heads kv_heads head_dim [kv_dtype] [kernel] [graph]
 *               [l2] [v_head_dim] [mla] [topk]
 *   moe         tokens hidden inter topk experts [tp] [ep] dtype [backend] [graph]
 *   collective  op ranks bytes [nodes] [dtype] [impl] [algo] [graph]
 *   ep          op=dispatch|combine mode=normal|low_latency ep tokens hidden topk [dtype]
 *               [experts] [nodes]
 * `graph` defaults to 1 (inside a CUDA graph) for kernels, 0 for collectives (as nccl-tests
 * times them).
 * Values are non-negative integers (with K/M/G binary suffixes for `bytes`) or one word of a
 * fixed list. The parse checks each key belongs to the kind, appears once, and has a valid
 * value; it fills defaults. Errors (SCENARIO_ERROR_INVALID) are one line naming the key and what
 * would be valid; the caller prefixes where the text came from.
 */
#ifndef SRC_COST_QUERY_H
#define SRC_COST_QUERY_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum {
    COST_GEMM = 0,
    COST_ATTENTION,
    COST_MOE,
    COST_COLLECTIVE,
    COST_EP,
    COST_KIND_COUNT
} CostKind;

/* Keys, by kind; a query keeps one value per key of its kind, indexed by these. */
enum { CQ_GEMM_M = 0, CQ_GEMM_N, CQ_GEMM_K, CQ_GEMM_DTYPE, CQ_GEMM_GRAPH, CQ_GEMM_COUNT };
enum {
    CQ_ATTN_PHASE = 0,
    CQ_ATTN_BATCH,
    CQ_ATTN_SEQLEN,
    CQ_ATTN_CONTEXT,
    CQ_ATTN_CACHED,
    CQ_ATTN_HEADS,
    CQ_ATTN_KV_HEADS,
    CQ_ATTN_HEAD_DIM,
    CQ_ATTN_CAUSAL,
    CQ_ATTN_WINDOW,
    CQ_ATTN_DTYPE,
    CQ_ATTN_KV_DTYPE,
    CQ_ATTN_KERNEL,
    CQ_ATTN_GRAPH,
    CQ_ATTN_L2,
    CQ_ATTN_V_HEAD_DIM,
    CQ_ATTN_MLA,
    CQ_ATTN_TOPK,
    CQ_ATTN_KV_LAYOUT,
    CQ_ATTN_COUNT
};
enum {
    CQ_MOE_TOKENS = 0,
    CQ_MOE_HIDDEN,
    CQ_MOE_INTER,
    CQ_MOE_TOPK,
    CQ_MOE_EXPERTS,
    CQ_MOE_TP,
    CQ_MOE_EP,
    CQ_MOE_DTYPE,
    CQ_MOE_BACKEND,
    CQ_MOE_DIST,
    CQ_MOE_GRAPH,
    CQ_MOE_COUNT
};
enum {
    CQ_COLL_OP = 0,
    CQ_COLL_RANKS,
    CQ_COLL_BYTES,
    CQ_COLL_NODES,
    CQ_COLL_DTYPE,
    CQ_COLL_IMPL,
    CQ_COLL_ALGO,
    CQ_COLL_GRAPH,
    CQ_COLL_COUNT
};
enum {
    CQ_EP_OP = 0,
    CQ_EP_MODE,
    CQ_EP_EP,
    CQ_EP_TOKENS,
    CQ_EP_HIDDEN,
    CQ_EP_TOPK,
    CQ_EP_DTYPE,
    CQ_EP_EXPERTS,
    CQ_EP_NODES,
    CQ_EP_COUNT
};
#define COST_QUERY_MAX_KEYS 24

typedef struct {
    CostKind kind;
    uint64_t val[COST_QUERY_MAX_KEYS]; /* integers as given; a word as its index in the
                                          key's list (cost_query_word) */
    bool given[COST_QUERY_MAX_KEYS];
} CostQuery;

const char *cost_kind_name(CostKind k);

/* Parses argv[0] = KIND and argv[1..argc-1] = key=value. */
bool cost_query_parse(int argc, char *const *argv, CostQuery *out, GError **error);
/* The same from one string of space-separated words ("gemm m=1 n=2 k=3 dtype=bf16" or, with
 * `kind` given, just the key=value words). */
bool cost_query_parse_text(const char *kind, const char *text, CostQuery *out, GError **error);

/* The word a word-valued key holds ("prefill", "fp8", "auto"...), or NULL for an integer key. */
const char *cost_query_word(const CostQuery *q, int key);
/* The key's name in the query's kind. */
const char *cost_query_key_name(CostKind kind, int key);

#endif
