/* src/store/store-hash.h — the 128-bit hash of an op record as a row will hold it, shared by
 * the time lines (which ranks share one, store-timelines.c) and their segments (which parts of
 * a time line repeat, store-segments.c). doc/decisions.md says why a hash and not a
 * comparison. */
#ifndef SRC_STORE_HASH_H
#define SRC_STORE_HASH_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../sched/engine.h"

/* The 128-bit product of x and y folded to 64 bits (the multiply-and-fold step of wyhash,
 * github.com/wangyi-fudan/wyhash): every output bit depends on every input bit. */
__extension__ typedef unsigned __int128 U128; /* GCC and Clang on 64-bit targets */

static inline uint64_t store_mum(uint64_t x, uint64_t y)
{
    U128 m = (U128)x * y;
    return (uint64_t)m ^ (uint64_t)(m >> 64);
}

/* The record's stored fields as words, the group replaced by its slot (-1: none) and the
 * fields the row leaves NULL left out, exactly as the row will hold them. */
static inline void store_record_words(const SchedRecord *x, int32_t slot, uint64_t w[8])
{
    bool coll = x->group >= 0;
    w[0] = (uint64_t)x->kind | (uint64_t)x->bound << 8 | (uint64_t)(coll ? x->dtype : 0) << 16 |
           (uint64_t)(uint32_t)x->layer << 32;
    w[1] = (uint64_t)x->name | (uint64_t)(uint32_t)slot << 32;
    w[2] = x->idx;
    w[3] = coll ? x->seq : 0;
    w[4] = coll ? x->count : 0;
    w[5] = x->tokens;
    w[6] = (uint64_t)x->start_ns;
    w[7] = (uint64_t)(x->end_ns < 0 ? -1 : x->end_ns);
}

/* Keys of the record hash: the hexadecimal digits of pi (as in Blowfish's P-array), so that
 * no field value that can occur cancels one. */
static const uint64_t STORE_HASH_K[10] = {
    0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL,
    0x452821e638d01377ULL, 0xbe5466cf34e90c6cULL, 0xc0ac29b7c97c50ddULL, 0x3f84d5b5b5470917ULL,
    0x9216d5d98979fb1bULL, 0xd1310ba698dfb5acULL,
};

/* Two independent 64-bit hashes of a record's words: each pairs the words differently, and a
 * last fold spreads every word over every bit (the sums of classify() need that). */
static inline void store_record_hash(const uint64_t w[8], uint64_t *a, uint64_t *b)
{
    uint64_t x = store_mum(w[0] ^ STORE_HASH_K[0], w[1] ^ STORE_HASH_K[1]) ^
                 store_mum(w[2] ^ STORE_HASH_K[2], w[3] ^ STORE_HASH_K[3]) ^
                 store_mum(w[4] ^ STORE_HASH_K[4], w[5] ^ STORE_HASH_K[5]) ^
                 store_mum(w[6] ^ STORE_HASH_K[6], w[7] ^ STORE_HASH_K[7]);
    uint64_t y = store_mum(w[0] ^ STORE_HASH_K[5], w[2] ^ STORE_HASH_K[8]) ^
                 store_mum(w[1] ^ STORE_HASH_K[7], w[4] ^ STORE_HASH_K[9]) ^
                 store_mum(w[3] ^ STORE_HASH_K[1], w[6] ^ STORE_HASH_K[0]) ^
                 store_mum(w[5] ^ STORE_HASH_K[3], w[7] ^ STORE_HASH_K[2]);
    *a = store_mum(x ^ STORE_HASH_K[8], STORE_HASH_K[9]);
    *b = store_mum(y ^ STORE_HASH_K[4], STORE_HASH_K[6]);
}

/* A run of records summed into two hashes with its count: equal keys, equal runs (a rank's
 * time line, a part of one), a GHashTable key with the two functions below. */
typedef struct {
    uint64_t n, h1, h2;
} StoreRunKey;

static inline guint store_run_key_hash(gconstpointer p)
{
    const StoreRunKey *k = p;
    return (guint)(k->h1 ^ k->h1 >> 32);
}

static inline gboolean store_run_key_equal(gconstpointer a, gconstpointer b)
{
    const StoreRunKey *x = a, *y = b;
    return x->n == y->n && x->h1 == y->h1 && x->h2 == y->h2;
}

#endif
