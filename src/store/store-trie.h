/* src/store/store-trie.h — the prefix nodes that let ranks in step share their staged records
 * (store-timelines.c's time lines, store-cut.c's segments); see store-ops.h for the idea.
 *
 * A chain of records, in arrival order, is a path from the root: the node after record i is
 * named by the 128-bit hash of records 0..i (the prefix), and holds record i's words and hash.
 * A chain that meets a prefix for the first time makes a node (its record is staged by the
 * caller: node v is staged record v); a chain that meets a known prefix moves along without
 * hashing, comparing the record's words with the kept child's. Only the last 262,144 nodes
 * are kept in full (128 B each, in a ring that grows to 32 MiB as nodes are made), plus 4 B per
 * node (its parent) and a table
 * of the children of nodes with more than eight: a chain lagging further behind makes nodes of
 * its own — more staged, the same rows. Not thread-safe.
 */
#ifndef SRC_STORE_TRIE_H
#define SRC_STORE_TRIE_H

#include <stdbool.h>
#include <stdint.h>

/* The root (the empty chain), and "no node". */
#define STORE_TRIE_ROOT UINT32_MAX

/* The prefix hash of the empty chain. */
#define STORE_TRIE_P1 0x452821e638d01377ULL /* digits of pi, as the record hash's keys */
#define STORE_TRIE_P2 0xbe5466cf34e90c6cULL

typedef struct StoreTrie StoreTrie;

/* Where a chain is: its node and its prefix hash. */
typedef struct {
    uint32_t node;
    uint64_t p1, p2;
} StoreTrieAt;

static inline StoreTrieAt store_trie_start(void)
{
    return (StoreTrieAt){STORE_TRIE_ROOT, STORE_TRIE_P1, STORE_TRIE_P2};
}

StoreTrie *store_trie_new(void);
void store_trie_free(StoreTrie *t);
/* Moves chain `at` over the record whose words are `w` (store_record_words); `ra`, `rb` get the
 * record's hash (store_record_hash). True when the node is new: the caller stages the record as
 * node `at->node`. The nodes an `indexed` chain makes are filed under their prefix hash when
 * the ring of kept nodes no longer leads to them (a 24 B slot in a table a quarter to half
 * full: 48 to 96 B a node), so they are found again however long ago they were made
 * (segments that recur); other chains file only a node's children beyond its first eight.
 * Indexed chains and the others never share a node (their prefixes are hashed apart): a
 * record's flags are not among its words. When node ids run out (4 billion), the chain stays
 * where it is and store_trie_overflow says so. */
bool store_trie_next(StoreTrie *t, StoreTrieAt *at, const uint64_t w[8], bool indexed, uint64_t *ra,
                     uint64_t *rb);
/* Node `v`'s parent (STORE_TRIE_ROOT for the root's children). */
uint32_t store_trie_parent(const StoreTrie *t, uint32_t v);
/* Nodes made (= records to stage). */
uint32_t store_trie_count(const StoreTrie *t);
bool store_trie_overflow(const StoreTrie *t);

#endif
