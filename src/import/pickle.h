/* src/import/pickle.h — a strict reader for Python pickles of plain data (protocols 0 to 5), for
 * PyTorch Flight Recorder dumps (`nccl_trace_rank_<R>`, pickle.dumps of a dict of plain
 * containers).
 *
 * It never imports or calls anything: every opcode that names code or builds an object
 * (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4, PERSID,
 * BINPERSID), sets and out-of-band buffers are refused where they stand. The value is built
 * as Python's unpickler builds it (shared objects stay shared while the pickle runs) and
 * turned into a json-glib tree only at STOP, where each shared reference becomes a copy.
 *
 * Costs: O(input) time and memory until STOP (at most one value per input byte, 32 bytes
 * each, plus the containers' item arrays and one memo entry per byte at worst); then one walk
 * of the shared graph that sizes the JSON tree before building anything, so a memo bomb is
 * refused in O(input) too; then the tree itself, at most `max_nodes` values (about 100 bytes
 * each in json-glib: 4 Mi values are about 430 MB) and at most `max_expansion` values per
 * input byte (with a floor of PICKLE_MIN_NODES), a string counting one value per 64 bytes
 * more. So an 18 KB pickle sharing one 4,096-int list 4,094 times (16.8 M values, 1.7 GB
 * once copied) is refused at STOP, before anything is copied. A real Flight Recorder dump
 * shares strings, not containers, and stays under one value per byte. Inputs of 4 GiB or more
 * are refused.
 */
#ifndef SRC_PICKLE_H
#define SRC_PICKLE_H

#include <glib.h>
#include <json-glib/json-glib.h>

/* The default limits of pickle_parse. */
#define PICKLE_MAX_NODES (G_GUINT64_CONSTANT(4) << 20) /* JSON values, copies included */
#define PICKLE_MAX_EXPANSION 16u /* JSON values per input byte, copies included ... */
#define PICKLE_MIN_NODES 65536u  /* ... but any pickle may expand to this many */
#define PICKLE_MAX_DEPTH 512u                           /* containers, one inside another */
#define PICKLE_DEPTH_CAP 4096u /* the most max_depth may be: the tree is built recursively */

typedef struct {
    guint64 max_nodes; /* JSON values the tree may hold, each copy of a shared reference
                          counted (0: PICKLE_MAX_NODES) */
    guint max_expansion; /* JSON values per input byte, copies counted, with a floor of
                            PICKLE_MIN_NODES (0: PICKLE_MAX_EXPANSION) */
    guint max_depth;   /* containers nested one inside another, the outermost counted,
                          1 .. PICKLE_DEPTH_CAP (0: PICKLE_MAX_DEPTH) */
} PickleLimits;

/* Parses `len` bytes of pickle into a json-glib tree: dict -> object, list and tuple -> array,
 * str -> string, bytes/bytearray -> string (when valid UTF-8, otherwise refused), int -> int
 * (ints outside int64 refused), float -> double (NaN and infinities as they are), bool ->
 * boolean, None -> null. Dict keys must be str or int (an int becomes its decimal string; an
 * int and a str key with the same text are refused); a repeated key keeps its first place and
 * its last value, as in Python. Python 2 str (STRING, BINSTRING, SHORT_BINSTRING) reads as
 * str, as Python 3 reads it. Stricter than Python where its pickler never goes: strings
 * holding NUL are refused (a JSON tree holds C strings), STOP must leave exactly one value and
 * no open MARK, a FRAME may not start inside another, and only ASCII whitespace may follow
 * STOP. A container holding itself (a cycle) is refused.
 *
 * `what` names the input in messages (a path). Returns a new tree (caller frees with
 * json_node_unref), or NULL with a G_IO_ERROR_INVALID_DATA GError whose one-line message is
 * "WHAT: pickle byte OFFSET: REASON", OFFSET being where the opcode at fault starts; for what
 * is found at STOP (a cycle, nesting too deep, too many values, an int and a str key with the
 * same text), where the container or key at fault was made. */
JsonNode *pickle_parse(const guint8 *data, gsize len, const char *what, GError **error);

/* pickle_parse with other limits (`limits` NULL: the defaults). */
JsonNode *pickle_parse_limits(const guint8 *data, gsize len, const char *what,
                              const PickleLimits *limits, GError **error);

#endif
