/* tests/src/import/test-pickle.c — the pickle reader (src/import/pickle.h) against Python's own pickle.
 *
 * Oracle: the fixtures in tests/data/pickle/ were written by Python's pickle module
 * (make-fixtures.py), and GROUP.json is what Python's unpickler made of them. Each protocol's
 * pickle of a group must parse to that tree, equal once serialized (member order included).
 * Bad input: class instances, os.system, sets, a cycle, a memo bomb, ints beyond int64, keys
 * of other types, bad text, data after STOP, every truncation of valid dumps, every refused
 * and unknown opcode (names from Python's pickletools), hand-made stack faults. Each refusal
 * is checked for its one-line message, "PATH: pickle byte N: REASON", N and REASON included.
 */
#include <criterion/criterion.h>
#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../../src/import/pickle.h"

#define DATA_DIR RANKSIM_SOURCE_DIR "/tests/data/pickle"

static GBytes *fixture(const char *name)
{
    g_autofree char *path = g_build_filename(DATA_DIR, name, NULL);
    g_autoptr(GError) err = NULL;
    char *text = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(path, &text, &len, &err), "%s", err ? err->message : "");
    return g_bytes_new_take(text, len);
}

/* The tree a pickle fixture parses to; fails the test when it is refused. */
static JsonNode *parse_fixture(const char *name)
{
    g_autoptr(GBytes) b = fixture(name);
    g_autoptr(GError) err = NULL;
    gsize len;
    const guint8 *d = g_bytes_get_data(b, &len);
    JsonNode *n = pickle_parse(d, len, name, &err);
    cr_assert_not_null(n, "%s: %s", name, err ? err->message : "refused without an error");
    cr_assert_null(err);
    return n;
}

static char *to_json(JsonNode *n)
{
    return json_to_string(n, FALSE);
}

/* GROUP.json as json-glib writes it. */
static char *expected(const char *group)
{
    g_autofree char *name = g_strconcat(group, ".json", NULL);
    g_autofree char *path = g_build_filename(DATA_DIR, name, NULL);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) err = NULL;
    cr_assert(json_parser_load_from_file(parser, path, &err), "%s", err ? err->message : "");
    return to_json(json_parser_get_root(parser));
}

static void assert_same(const char *pickle_name, const char *group)
{
    g_autoptr(JsonNode) n = parse_fixture(pickle_name);
    g_autofree char *got = to_json(n), *want = expected(group);
    cr_assert_str_eq(got, want, "%s differs from %s.json", pickle_name, group);
}

/* `len` bytes refused with "WHAT: pickle byte AT: ...REASON..." on one line. */
static void assert_refused_limits(const void *data, gsize len, const PickleLimits *lim,
                                  gsize at, const char *reason)
{
    const char *what = "dump";
    g_autoptr(GError) err = NULL;
    /* an exact-size copy, so ASan sees any read past the end */
    g_autofree guint8 *copy = g_memdup2(data, len ? len : 1);
    g_autoptr(JsonNode) n = pickle_parse_limits(len ? copy : NULL, len, what, lim, &err);
    cr_assert_null(n, "accepted, expected \"%s\" at byte %zu", reason, at);
    cr_assert_not_null(err);
    cr_assert(g_error_matches(err, G_IO_ERROR, G_IO_ERROR_INVALID_DATA), "%s", err->message);
    g_autofree char *prefix = g_strdup_printf("%s: pickle byte %zu: ", what, at);
    cr_assert(g_str_has_prefix(err->message, prefix), "'%s' does not start with '%s'",
              err->message, prefix);
    cr_assert(strstr(err->message, reason), "'%s' does not say '%s'", err->message, reason);
    cr_assert_null(strchr(err->message, '\n'), "more than one line: %s", err->message);
}

static void assert_refused(const void *data, gsize len, gsize at, const char *reason)
{
    assert_refused_limits(data, len, NULL, at, reason);
}

#define REFUSED(lit, at, reason) assert_refused(lit, sizeof(lit) - 1, at, reason)

static void assert_fixture_refused(const char *name, gsize at, const char *reason)
{
    g_autoptr(GBytes) b = fixture(name);
    gsize len;
    const guint8 *d = g_bytes_get_data(b, &len);
    assert_refused(d, len, at, reason);
}

/* A pickle given inline, accepted; its JSON. */
static char *inline_json(const void *data, gsize len)
{
    g_autoptr(GError) err = NULL;
    g_autofree guint8 *copy = g_memdup2(data, len);
    g_autoptr(JsonNode) n = pickle_parse(copy, len, "inline", &err);
    cr_assert_not_null(n, "%s", err ? err->message : "");
    return to_json(n);
}

#define INLINE_JSON(lit) inline_json(lit, sizeof(lit) - 1)

static JsonObject *entry(JsonNode *root, guint i)
{
    JsonArray *entries = json_object_get_array_member(json_node_get_object(root), "entries");
    return json_array_get_object_element(entries, i);
}

/* ---- accepted: the same tree as Python's ---- */

Test(pickle, flight_recorder_dump_same_tree_at_every_protocol)
{
    for (int p = 0; p <= 5; p++) {
        g_autofree char *name = g_strdup_printf("fr-p%d.pkl", p);
        assert_same(name, "fr");
    }
}

Test(pickle, flight_recorder_dump_types)
{
    for (int p = 0; p <= 5; p++) {
        g_autofree char *name = g_strdup_printf("fr-p%d.pkl", p);
        g_autoptr(JsonNode) root = parse_fixture(name);
        JsonObject *top = json_node_get_object(root);
        cr_assert_str_eq(json_object_get_string_member(top, "version"), "2.10");
        JsonObject *pg = json_object_get_object_member(
            json_object_get_object_member(top, "pg_config"), "0");
        cr_assert_str_eq(json_object_get_string_member(pg, "desc"), "default_pg");
        cr_assert_str_eq(json_object_get_string_member(pg, "ranks"), "[0, 1, 2, 3]");

        JsonObject *e0 = entry(root, 0), *e2 = entry(root, 2);
        JsonArray *group = json_object_get_array_member(e0, "process_group"); /* a tuple */
        cr_assert_eq(json_array_get_length(group), 2);
        cr_assert_str_eq(json_array_get_string_element(group, 1), "default_pg");
        JsonArray *sizes = json_array_get_array_element(
            json_object_get_array_member(e0, "input_sizes"), 0);
        cr_assert_eq(json_array_get_int_element(sizes, 0), 153);
        cr_assert_eq(json_array_get_int_element(sizes, 1), 64);
        JsonNode *t = json_object_get_member(e0, "time_created_ns");
        cr_assert_eq(json_node_get_value_type(t), G_TYPE_INT64, "%s", name);
        cr_assert_eq(json_node_get_int(t), INT64_C(1733040000123456789));
        cr_assert_eq(json_node_get_value_type(json_object_get_member(e0, "duration_ms")),
                     G_TYPE_DOUBLE);
        cr_assert_float_eq(json_object_get_double_member(e0, "duration_ms"), 1.5, 0);
        cr_assert_eq(json_node_get_value_type(json_object_get_member(e0, "retired")),
                     G_TYPE_BOOLEAN);
        cr_assert(json_object_get_boolean_member(e0, "retired"));
        cr_assert(json_object_get_null_member(e2, "time_discovered_completed_ns"));
        cr_assert_str_eq(json_object_get_string_member(e2, "state"), "scheduled");
        cr_assert_str_eq(json_object_get_string_member(e2, "profiling_name"),
                         "nccl:_all_gather_base");
        JsonObject *f = json_array_get_object_element(json_object_get_array_member(e2, "frames"),
                                                      1);
        cr_assert_eq(json_object_get_int_member(f, "line"), 120);
    }
}

Test(pickle, ints_to_int64_edges)
{
    assert_same("ints-p0.pkl", "ints");
    assert_same("ints-p2.pkl", "ints");
    g_autoptr(JsonNode) root = parse_fixture("ints-p2.pkl");
    JsonArray *a = json_node_get_array(root);
    const gint64 want[] = {0, 1, -1, 255, 256, 65535, 65536, G_MAXINT32, G_MININT32,
                           INT64_C(2147483648), INT64_C(1) << 40, -(INT64_C(1) << 40),
                           G_MAXINT64, G_MININT64};
    cr_assert_eq(json_array_get_length(a), G_N_ELEMENTS(want));
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        JsonNode *n = json_array_get_element(a, i);
        cr_assert_eq(json_node_get_value_type(n), G_TYPE_INT64);
        cr_assert_eq(json_node_get_int(n), want[i], "item %u", i);
    }
}

Test(pickle, floats)
{
    assert_same("floats-p0.pkl", "floats");
    assert_same("floats-p2.pkl", "floats");
    for (int p = 0; p <= 2; p += 2) {
        g_autofree char *name = g_strdup_printf("floats-p%d.pkl", p);
        g_autoptr(JsonNode) root = parse_fixture(name);
        JsonArray *a = json_node_get_array(root);
        cr_assert(signbit(json_array_get_double_element(a, 1)), "-0.0 keeps its sign");
        cr_assert_eq(json_array_get_double_element(a, 4), 1e-300);
        cr_assert_eq(json_array_get_double_element(a, 6), 3.141592653589793);
        cr_assert_eq(json_node_get_value_type(json_array_get_element(a, 7)), G_TYPE_DOUBLE,
                     "2.0 stays a float");
    }
    /* NaN and infinities pass as they are (BINFLOAT, FLOAT text) */
    g_autoptr(GError) err = NULL;
    static const guint8 nan_inf[] = "\x80\x02(G\x7f\xf8\x00\x00\x00\x00\x00\x00" "Finf\nF-inf\nl.";
    g_autoptr(JsonNode) n = pickle_parse(nan_inf, sizeof nan_inf - 1, "nan", &err);
    cr_assert_not_null(n, "%s", err ? err->message : "");
    JsonArray *a = json_node_get_array(n);
    cr_assert(isnan(json_array_get_double_element(a, 0)));
    cr_assert(isinf(json_array_get_double_element(a, 1)) &&
              json_array_get_double_element(a, 1) > 0);
    cr_assert(isinf(json_array_get_double_element(a, 2)) &&
              json_array_get_double_element(a, 2) < 0);
}

Test(pickle, unicode_strings)
{
    assert_same("unicode-p0.pkl", "unicode"); /* raw-unicode-escape, Latin-1 bytes */
    assert_same("unicode-p2.pkl", "unicode");
    assert_same("unicode-p4.pkl", "unicode");
    g_autoptr(JsonNode) root = parse_fixture("unicode-p0.pkl");
    JsonArray *a = json_node_get_array(root);
    cr_assert_str_eq(json_array_get_string_element(a, 2), "emoji \xf0\x9f\x8e\x89");
    cr_assert_str_eq(json_array_get_string_element(a, 7), "\\u0041 stays");
    cr_assert_str_eq(json_array_get_string_element(a, 8), "latin-1 \xc3\xbf");
}

Test(pickle, bytes_and_bytearray_as_text)
{
    assert_same("bytes-p3.pkl", "bytes");
    assert_same("bytes-p4.pkl", "bytes");
    assert_same("bytearray-p5.pkl", "bytearray"); /* BYTEARRAY8 */
}

Test(pickle, empty_dict)
{
    for (int p = 0; p <= 4; p += 2) {
        g_autofree char *name = g_strdup_printf("empty-p%d.pkl", p);
        assert_same(name, "empty");
        g_autoptr(JsonNode) root = parse_fixture(name);
        cr_assert_eq(json_object_get_size(json_node_get_object(root)), 0);
    }
}

/* One list referenced three times (memo GET): three copies, each its own. */
Test(pickle, shared_references_become_copies)
{
    assert_same("shared-p2.pkl", "shared");
    assert_same("shared-p4.pkl", "shared");
    g_autoptr(JsonNode) root = parse_fixture("shared-p2.pkl");
    JsonObject *o = json_node_get_object(root);
    JsonArray *a = json_object_get_array_member(o, "a"), *b = json_object_get_array_member(o, "b");
    cr_assert_neq(a, b);
    json_array_add_int_element(a, 99);
    cr_assert_eq(json_array_get_length(a), 3);
    cr_assert_eq(json_array_get_length(b), 2, "a copy, not the same array");
}

/* A list placed in a dict twice, then appended to through a GET: Python's object is shared,
 * so both places see the append; so must the tree. */
Test(pickle, mutation_after_get_seen_everywhere)
{
    assert_same("asm-mutate-after-get.pkl", "asm-mutate-after-get");
}

Test(pickle, every_supported_opcode)
{
    assert_same("asm-opcodes.pkl", "asm-opcodes"); /* 8-byte lengths, LONG4, memo, marks */
    assert_same("asm-py2.pkl", "asm-py2");         /* STRING, BINSTRING, INT True/False */
    /* POP with nothing after the MARK drops the MARK, as in Python */
    g_autofree char *j = INLINE_JSON("(0N.");
    cr_assert_str_eq(j, "null");
    g_autofree char *k = INLINE_JSON("\x80\x02K\x05.");
    cr_assert_str_eq(k, "5");
}

Test(pickle, int_keys_become_decimal_strings)
{
    assert_same("intkeys-p0.pkl", "intkeys");
    assert_same("intkeys-p2.pkl", "intkeys");
    assert_same("intkeys-p4.pkl", "intkeys");
}

/* A repeated key keeps its first place and its last value, as a Python dict does. */
Test(pickle, repeated_key_last_value_wins)
{
    g_autofree char *j = INLINE_JSON("\x80\x02}(X\x01\x00\x00\x00" "aK\x01X\x01\x00\x00\x00" "bK\x02"
                                     "X\x01\x00\x00\x00" "aK\x03u.");
    cr_assert_str_eq(j, "{\"a\":3,\"b\":2}");
    g_autofree char *k = INLINE_JSON("\x80\x02}K\x07K\x01sK\x07K\x02s.");
    cr_assert_str_eq(k, "{\"7\":2}");
}

Test(pickle, nesting_within_the_depth_limit)
{
    assert_same("nested100-p4.pkl", "nested100");
    g_autoptr(GBytes) b = fixture("nested100-p4.pkl");
    gsize len;
    const guint8 *d = g_bytes_get_data(b, &len);
    PickleLimits lim = {.max_depth = 100};
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) n = pickle_parse_limits(d, len, "x", &lim, &err);
    cr_assert_not_null(n, "100 lists at max_depth 100: %s", err ? err->message : "");
    lim.max_depth = 99;
    /* list 100 (the innermost) is the one too deep: EMPTY_LIST at 11 + 2 * 99 */
    assert_refused_limits(d, len, &lim, 209, "containers nested more than 99 deep");
}

/* ---- refused ---- */

Test(pickle, class_instances_refused)
{
    assert_fixture_refused("refuse-ordereddict-p2.pkl", 2,
                           "opcode GLOBAL (0x63) for collections.OrderedDict refused: a Flight "
                           "Recorder dump holds only dict, list, tuple, str, bytes, int, float, "
                           "bool and None; ranksim never imports or calls anything from a "
                           "pickle");
    assert_fixture_refused("refuse-ordereddict-p4.pkl", 39,
                           "opcode STACK_GLOBAL (0x93) for collections.OrderedDict refused");
    assert_fixture_refused("refuse-class-p2.pkl", 2,
                           "opcode GLOBAL (0x63) for fr_dump.Record refused");
}

/* Written by pickle.dumps, never loaded: ranksim must stop at the name. */
Test(pickle, os_system_refused)
{
    assert_fixture_refused("refuse-os-system-p0.pkl", 0,
                           "opcode GLOBAL (0x63) for posix.system refused: a Flight Recorder "
                           "dump holds only");
    assert_fixture_refused("refuse-os-system-p4.pkl", 28,
                           "opcode STACK_GLOBAL (0x93) for posix.system refused");
}

Test(pickle, sets_refused)
{
    assert_fixture_refused("refuse-set-p4.pkl", 21, "opcode EMPTY_SET (0x8f) (a set) refused");
    assert_fixture_refused("refuse-frozenset-p4.pkl", 16,
                           "opcode FROZENSET (0x91) (a set) refused");
    assert_fixture_refused("refuse-set-p2.pkl", 2, "opcode GLOBAL (0x63) for __builtin__.set");
}

Test(pickle, cycle_refused)
{
    assert_fixture_refused("refuse-cycle-p2.pkl", 2,
                           "the list made here contains itself: a cycle has no JSON form");
}

/* Billion laughs: list k+1 holds list k ten times (10**9 values in 234 bytes). The tree is
 * sized before it is built: refused at once, at the first list over the cap. */
Test(pickle, memo_bomb_refused_fast)
{
    g_autoptr(GBytes) b = fixture("refuse-bomb-p2.pkl");
    gsize len;
    const guint8 *d = g_bytes_get_data(b, &len);
    /* list 8 holds 111,111,111 values, list 7 11,111,111 (under 16 Mi); LIST of list k at
     * 27 + 25 (k - 1). Refused at offset 202, list 8's LIST: sized before it is built, so
     * nothing of 10**9 values was materialised (the offset is the fact; how long it takes is
     * measured by `make bench`, not asserted). */
    assert_refused(d, len, 202, "the list made here expands to more than 16777216 values once "
                   "each shared reference (memo GET) is copied: a memo bomb?");
    PickleLimits lim = {.max_nodes = 1000};
    assert_refused_limits(d, len, &lim, 77, "expands to more than 1000 values"); /* list 3 */
    lim.max_nodes = 3;
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) ok = pickle_parse_limits((const guint8 *)"\x80\x02(K\x01K\x02l.", 9,
                                                 "x", &lim, &err);
    cr_assert_not_null(ok, "[1, 2] is 3 values: %s", err ? err->message : "");
    assert_refused_limits("\x80\x02(K\x01K\x02K\x03l.", 11, &lim, 9, "more than 3 values");
}

Test(pickle, nesting_beyond_512_refused)
{
    /* 600 lists one inside the other; the 513th from the outside, at 11 + 2 * 512, is too
     * deep */
    assert_fixture_refused("refuse-nested600-p4.pkl", 1035, "containers nested more than 512 "
                           "deep (through the list made here)");
    PickleLimits lim = {.max_depth = 1};
    assert_refused_limits("\x80\x02]]a.", 6, &lim, 3, "nested more than 1 deep");
}

Test(pickle, ints_beyond_int64_refused)
{
    assert_fixture_refused("refuse-bigint-p2.pkl", 8, "LONG1: an int of 9 bytes beyond int64");
    assert_fixture_refused("refuse-negbigint-p2.pkl", 5, "LONG1: an int of 9 bytes beyond int64");
    REFUSED("I9223372036854775808\n.", 0, "INT 9223372036854775808 is beyond int64");
    REFUSED("L-9223372036854775809L\n.", 0, "LONG -9223372036854775809 is beyond int64");
    g_autofree char *min = INLINE_JSON("L-9223372036854775808L\n.");
    cr_assert_str_eq(min, "-9223372036854775808");
    REFUSED("\x8b\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00.", 0,
            "LONG4: an int of 10 bytes beyond int64");
}

Test(pickle, keys_other_than_str_and_int_refused)
{
    assert_fixture_refused("refuse-key-tuple-p2.pkl", 20,
                           "SETITEM: a dict key of type tuple; a Flight Recorder dump's keys "
                           "are str (or int)");
    assert_fixture_refused("refuse-key-float-p2.pkl", 22, "SETITEM: a dict key of type float");
    assert_fixture_refused("refuse-key-bytes-p3.pkl", 18, "SETITEM: a dict key of type bytes");
    REFUSED("\x80\x02}\x88K\x01s.", 6, "SETITEM: a dict key of type bool");
    REFUSED("\x80\x02}NK\x01s.", 6, "SETITEM: a dict key of type None");
    REFUSED("\x80\x02(NK\x01" "d.", 6, "DICT: a dict key of type None");
    REFUSED("\x80\x02}(NK\x01u.", 7, "SETITEMS: a dict key of type None");
    /* {1: "a", "1": "b"}: two keys in Python, one JSON member name */
    assert_fixture_refused("refuse-key-collision-p2.pkl", 16,
                           "the dict keys 1 (int, made at byte 6) and '1' (str) are both the "
                           "JSON member \"1\"; ranksim cannot keep both");
}

Test(pickle, bad_text_refused)
{
    assert_fixture_refused("refuse-bad-utf8-bytes-p3.pkl", 15,
                           "bytes (SHORT_BINBYTES) that is not valid UTF-8 (byte 0xff, 0 bytes "
                           "into it); ranksim reads bytes only as UTF-8 text");
    assert_fixture_refused("refuse-surrogate-p2.pkl", 5,
                           "a str (BINUNICODE) holding a lone surrogate (bytes 0xed 0xa0, 0 "
                           "bytes into it), which is not UTF-8");
    assert_fixture_refused("refuse-nul-p4.pkl", 20,
                           "a str (SHORT_BINUNICODE) holding a NUL character (1 bytes into it)");
    REFUSED("X\x03\x00\x00\x00" "ab\xc3.", 0, "a str (BINUNICODE) that is not valid UTF-8 "
            "(byte 0xc3, 2 bytes into it)");
    REFUSED("Vab\\ud800\n.", 0, "UNICODE: the escape \\ud800 is a lone surrogate");
    REFUSED("V\\u0000\n.", 0, "UNICODE: the escape \\u0000 is a NUL character");
    REFUSED("V\\U00110000\n.", 0, "UNICODE: the escape \\U00110000 is beyond U+10FFFF");
    REFUSED("Vab\\u00g0\n.", 0, "UNICODE: a truncated \\u escape 2 bytes into the text");
    REFUSED("S'abc\n.", 0, "STRING's argument is not quoted");
    REFUSED("S'a\\x4'\n.", 0, "STRING: an invalid \\x escape 1 bytes into the string");
    REFUSED("S'\\xff'\n.", 0, "a str (STRING) that is not valid UTF-8 (byte 0xff");
    REFUSED("I12x\n.", 0, "INT's argument '12x' is not a decimal integer");
    REFUSED("I\n.", 0, "INT's argument '' is not a decimal integer");
    REFUSED("Fabc\n.", 0, "FLOAT's argument 'abc' is not a number");
    REFUSED("F0x10\n.", 0, "FLOAT's argument '0x10' is not a number");
    REFUSED("gx\n.", 0, "GET's memo index 'x' is not a number from 0 to 4294967295");
    REFUSED("Np-1\n.", 1, "PUT's memo index '-1' is not a number");
}

Test(pickle, data_after_stop)
{
    g_autoptr(GBytes) b = fixture("fr-p2.pkl");
    gsize len;
    const guint8 *d = g_bytes_get_data(b, &len);
    g_autofree guint8 *buf = g_malloc(len + 16);
    memcpy(buf, d, len);

    memcpy(buf + len, " \r\n\t", 4); /* whitespace after STOP: accepted */
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) n = pickle_parse(buf, len + 4, "ws", &err);
    cr_assert_not_null(n, "%s", err ? err->message : "");

    memcpy(buf + len, "\njunk", 5);
    assert_refused(buf, len + 5, len + 1,
                   "4 bytes of data after STOP (byte 0x6a first): a Flight Recorder dump is "
                   "exactly one pickle");
    memcpy(buf + len, "\x80\x02N.", 4); /* a second pickle */
    assert_refused(buf, len + 4, len, "4 bytes of data after STOP (byte 0x80 first)");
}

/* Every prefix of a valid dump is refused as truncated, with no read past its end (each
 * prefix is its own allocation, which ASan watches). */
Test(pickle, every_truncation_refused)
{
    const char *names[] = {"fr-p0.pkl", "fr-p1.pkl", "fr-p2.pkl", "fr-p3.pkl", "fr-p4.pkl",
                           "fr-p5.pkl", "asm-opcodes.pkl", "asm-py2.pkl", "unicode-p0.pkl",
                           "bytearray-p5.pkl", "floats-p0.pkl", "intkeys-p0.pkl"};
    guint tried = 0;
    for (guint f = 0; f < G_N_ELEMENTS(names); f++) {
        g_autoptr(GBytes) b = fixture(names[f]);
        gsize len;
        const guint8 *d = g_bytes_get_data(b, &len);
        for (gsize k = 0; k < len; k++, tried++) {
            g_autofree guint8 *prefix = g_memdup2(d, k ? k : 1);
            g_autoptr(GError) err = NULL;
            g_autoptr(JsonNode) n = pickle_parse(k ? prefix : NULL, k, "cut", &err);
            cr_assert_null(n, "%s cut to %zu bytes was accepted", names[f], k);
            cr_assert_not_null(err);
            cr_assert(g_str_has_prefix(err->message, "cut: pickle byte "), "%s", err->message);
            cr_assert(strstr(err->message, ": truncated: "), "%s cut to %zu bytes: %s",
                      names[f], k, err->message);
        }
    }
    cr_assert_gt(tried, 8000);
}

static gboolean read_opcodes(GHashTable *names)
{
    g_autoptr(GBytes) b = fixture("opcodes.tsv");
    g_auto(GStrv) lines = g_strsplit(g_bytes_get_data(b, NULL), "\n", -1);
    for (char **l = lines; *l; l++) {
        if (!**l || **l == '#')
            continue;
        g_auto(GStrv) f = g_strsplit(*l, "\t", 3);
        cr_assert_eq(g_strv_length(f), 3, "%s", *l);
        guint64 code = g_ascii_strtoull(f[0], NULL, 16);
        g_hash_table_insert(names, GUINT_TO_POINTER(code), g_strdup(f[1]));
    }
    return g_hash_table_size(names) == 68;
}

/* Every opcode that imports, calls, builds an object, a set or a buffer is refused by its
 * Python name where it stands; every byte that is no opcode is refused as unknown. */
Test(pickle, every_refused_and_unknown_opcode)
{
    g_autoptr(GHashTable) names = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                                        g_free);
    cr_assert(read_opcodes(names), "pickletools lists 68 opcodes");
    static const char *const refused[] = {
        "GLOBAL",    "STACK_GLOBAL", "REDUCE", "BUILD",     "INST",      "OBJ",
        "NEWOBJ",    "NEWOBJ_EX",    "EXT1",   "EXT2",      "EXT4",      "PERSID",
        "BINPERSID", "EMPTY_SET",    "ADDITEMS", "FROZENSET", "NEXT_BUFFER", "READONLY_BUFFER"};
    guint n_refused = 0, n_unknown = 0;
    for (guint op = 0; op < 256; op++) {
        guint8 data[3] = {0x80, 0x05, (guint8)op};
        const char *name = g_hash_table_lookup(names, GUINT_TO_POINTER(op));
        if (!name) {
            g_autofree char *why = g_strdup_printf("unknown opcode 0x%02x: not a pickle of "
                                                   "protocol 0 to 5, or a corrupt one", op);
            assert_refused(data, 3, 2, why);
            n_unknown++;
            continue;
        }
        bool is_refused = false;
        for (guint i = 0; i < G_N_ELEMENTS(refused); i++)
            is_refused |= strcmp(refused[i], name) == 0;
        if (!is_refused)
            continue;
        g_autofree char *why = g_strdup_printf("opcode %s (0x%02x)", name, op);
        assert_refused(data, 3, 2, why);
        assert_refused(data, 3, 2, "refused: a Flight Recorder dump holds only dict, list, "
                                   "tuple, str, bytes, int, float, bool and None; ranksim never "
                                   "imports or calls anything from a pickle");
        n_refused++;
    }
    cr_assert_eq(n_refused, G_N_ELEMENTS(refused));
    cr_assert_eq(n_unknown, 256 - 68);
    REFUSED("\x80\x05\x97.", 2, "opcode NEXT_BUFFER (0x97) (an out-of-band buffer) refused");
}

Test(pickle, stack_faults_refused)
{
    REFUSED("\x80\x02" "a.", 2, "stack underflow: APPEND needs a value and the stack is empty");
    REFUSED("\x80\x02]K\x01" "e.", 5, "APPENDS without a MARK before it");
    REFUSED("\x80\x02(e.", 3, "stack underflow: APPENDS has no list before its MARK");
    REFUSED(")K\x01" "a.", 3, "APPEND to a tuple: only a list takes it");
    REFUSED("\x80\x02]K\x01K\x02s.", 7, "SETITEM to a list: only a dict takes it");
    REFUSED("\x80\x02](K\x01K\x02u.", 8, "SETITEMS to a list: only a dict takes it");
    REFUSED("\x80\x02}(K\x01u.", 6, "SETITEMS of an odd number of items (1)");
    REFUSED("\x80\x02(K\x01K\x02K\x03" "d.", 9, "DICT of an odd number of items (3)");
    REFUSED("\x80\x02K\x01\x86.", 4, "stack underflow: TUPLE2 needs a value");
    REFUSED("\x80\x02(]K\x01" "a0a.", 8, "stack underflow: APPEND needs a value and there is "
            "none after the MARK at byte 2");
    REFUSED("\x80\x02h\x05.", 2, "BINGET of memo index 5, which no PUT stored");
    REFUSED("\x80\x02j\x00\x00\x00\x01.", 2, "LONG_BINGET of memo index 16777216, which no PUT "
            "stored");
    REFUSED("\x80\x02q\x00.", 2, "stack underflow: BINPUT needs a value");
    REFUSED("\x80\x02\x94.", 2, "stack underflow: MEMOIZE needs a value");
    REFUSED("\x80\x02" "2.", 2, "stack underflow: DUP needs a value");
    REFUSED("\x80\x02" "0.", 2, "stack underflow: POP needs a value");
    REFUSED("\x80\x02" "1.", 2, "POP_MARK without a MARK before it");
    REFUSED("\x80\x02" "l.", 2, "LIST without a MARK before it");
    REFUSED("\x80\x02.", 2, "stack underflow: STOP needs a value and the stack is empty");
    REFUSED("\x80\x02(.", 3, "stack underflow: STOP needs a value and there is none after the "
            "MARK at byte 2");
    REFUSED("\x80\x02(K\x01.", 5, "STOP inside the MARK at byte 2");
    REFUSED("\x80\x02K\x01K\x02.", 6, "STOP leaves 1 more values on the stack");
    REFUSED("\x80\x06N.", 0, "protocol 6: ranksim reads protocols 0 to 5");
    REFUSED("\x80\x04\x95\x02\x00\x00\x00\x00\x00\x00\x00\x95\x01\x00\x00\x00\x00\x00\x00\x00N.",
            11, "a FRAME inside the frame that ends at byte 13");
    REFUSED("\x80\x02T\xff\xff\xff\xff.", 2, "BINSTRING has a negative length");
    REFUSED("\x80\x02\x8b\x00\x00\x00\x80.", 2, "LONG4 has a negative length");
}

Test(pickle, truncations_named)
{
    REFUSED("", 0, "truncated: the input is empty");
    REFUSED("\x80\x02N", 3, "truncated: the input ends before STOP");
    REFUSED("\x80", 0, "truncated: PROTO needs 1 bytes of version, 0 left");
    REFUSED("X\xff\xff\xff\x7f" "abc.", 0, "truncated: BINUNICODE needs 2147483647 bytes of "
            "string, 4 left");
    REFUSED("\x8e\xff\xff\xff\xff\xff\xff\xff\xff.", 0, "truncated: BINBYTES8 needs "
            "18446744073709551615 bytes of bytes, 1 left");
    REFUSED("\x80\x04\x95\xff\x00\x00\x00\x00\x00\x00\x00N.", 2, "truncated: a FRAME of 255 "
            "bytes, 2 left");
    REFUSED("Vabc", 0, "truncated: UNICODE's text argument has no end of line");
    REFUSED("\x80\x02J\x01\x02", 2, "truncated: BININT needs 4 bytes of int, 2 left");
    REFUSED("\x80\x02G\x01\x02", 2, "truncated: BINFLOAT needs 8 bytes of float, 2 left");
    REFUSED("\x80\x02\x8a\x05\x01", 2, "truncated: LONG1 needs 5 bytes of int, 1 left");
    REFUSED("\x80\x02]j\x01", 3, "truncated: LONG_BINGET needs 4 bytes of memo index, 1 left");
}

/* A big, flat dump-like list: linear, and each item its own node. */
Test(pickle, large_flat_list)
{
    const guint n = 200000;
    GByteArray *b = g_byte_array_new();
    g_byte_array_append(b, (const guint8 *)"\x80\x02](", 4);
    for (guint i = 0; i < n; i++) {
        guint8 item[6] = {'J', (guint8)i, (guint8)(i >> 8), (guint8)(i >> 16), 0, 0};
        g_byte_array_append(b, item, 5);
        if (i % 1000 == 999)
            g_byte_array_append(b, (const guint8 *)"e(", 2);
    }
    g_byte_array_append(b, (const guint8 *)"e.", 2);
    g_autoptr(GError) err = NULL;
    g_autoptr(GBytes) bytes = g_byte_array_free_to_bytes(b);
    gsize len;
    const guint8 *d = g_bytes_get_data(bytes, &len);
    g_autoptr(JsonNode) root = pickle_parse(d, len, "big", &err);
    cr_assert_not_null(root, "%s", err ? err->message : "");
    JsonArray *a = json_node_get_array(root);
    cr_assert_eq(json_array_get_length(a), n);
    cr_assert_eq(json_array_get_int_element(a, n - 1), n - 1);
}
