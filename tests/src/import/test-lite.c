/* tests/src/import/test-lite.c — the compact JSON tree (src/import/lite.h) against json-glib.
 *
 * Oracle: each valid document is parsed by lite_parse_json and by json-glib, and the two trees
 * are compared recursively through the lite accessors (types, lengths, member order, keys,
 * lite_get, every scalar); lite_from_json_node of the json-glib tree must give the same tree.
 * Bad input: each refusal is checked for its one-line "WHAT:LINE:COL: REASON", LINE, COL and
 * REASON included. Robustness: every prefix of a Flight Recorder dump is refused cleanly, and
 * every single-byte mutation of a small document either parses (to json-glib's tree) or is
 * refused cleanly; ASan/UBSan builds catch what does not crash. Inputs are exact-size copies
 * (no NUL after the last byte), so a read past the end is caught too. Reuse: one document
 * parsed into again and again, a refusal in between.
 */
#include <criterion/criterion.h>
#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../../src/import/lite.h"

#define FR_DUMP RANKSIM_SOURCE_DIR "/tests/data/import/fr/seed004-json/nccl_trace_rank_0.json"

/* An exact-size heap copy of `len` bytes (at least one byte allocated). */
static char *copy_of(const char *s, gsize len)
{
    char *c = g_malloc(len ? len : 1);
    memcpy(c, s, len);
    return c;
}

static JsonNode *glib_parse(const char *s, gsize len)
{
    g_autoptr(JsonParser) p = json_parser_new();
    g_autoptr(GError) err = NULL;
    g_autofree char *z = g_strndup(s, len);
    if (!json_parser_load_from_data(p, z, (gssize)len, &err))
        return NULL;
    return json_node_copy(json_parser_get_root(p));
}

/* The lite tree at `v` equals json-glib's `n`; `path` names the place in failure messages. */
static void assert_same_tree(const LiteDoc *d, LiteRef v, JsonNode *n, const char *path)
{
    cr_assert_neq(v, LITE_NONE, "%s: absent", path);
    LiteType t = lite_type(d, v);
    if (JSON_NODE_HOLDS_NULL(n)) {
        cr_assert_eq(t, LITE_NULL, "%s: type %d, null expected", path, t);
    } else if (JSON_NODE_HOLDS_ARRAY(n)) {
        JsonArray *a = json_node_get_array(n);
        cr_assert_eq(t, LITE_ARRAY, "%s: type %d, array expected", path, t);
        cr_assert_eq(lite_len(d, v), json_array_get_length(a), "%s: length", path);
        for (guint i = 0; i < json_array_get_length(a); i++) {
            g_autofree char *sub = g_strdup_printf("%s[%u]", path, i);
            assert_same_tree(d, lite_at(d, v, i), json_array_get_element(a, i), sub);
        }
        cr_assert_eq(lite_at(d, v, lite_len(d, v)), LITE_NONE, "%s: past the end", path);
        cr_assert_null(lite_key_at(d, v, 0), "%s: an array has no keys", path);
        cr_assert_eq(lite_get(d, v, "x"), LITE_NONE, "%s: lite_get of an array", path);
    } else if (JSON_NODE_HOLDS_OBJECT(n)) {
        JsonObject *o = json_node_get_object(n);
        cr_assert_eq(t, LITE_OBJECT, "%s: type %d, object expected", path, t);
        g_autoptr(GList) members = json_object_get_members(o);
        cr_assert_eq(lite_len(d, v), g_list_length(members), "%s: member count", path);
        guint i = 0;
        for (GList *m = members; m; m = m->next, i++) {
            const char *key = m->data;
            g_autofree char *sub = g_strdup_printf("%s.%s", path, key);
            cr_assert_str_eq(lite_key_at(d, v, i), key, "%s: key %u", path, i);
            cr_assert_eq(lite_get(d, v, key), lite_at(d, v, i), "%s: lite_get", sub);
            assert_same_tree(d, lite_at(d, v, i), json_object_get_member(o, key), sub);
        }
        cr_assert_null(lite_key_at(d, v, i), "%s: key past the end", path);
        cr_assert_eq(lite_at(d, v, i), LITE_NONE, "%s: past the end", path);
        cr_assert_eq(lite_get(d, v, "no such key \x01"), LITE_NONE, "%s: absent key", path);
    } else {
        switch (json_node_get_value_type(n)) {
        case G_TYPE_INT64:
            cr_assert_eq(t, LITE_INT, "%s: type %d, int expected", path, t);
            cr_assert_eq(lite_int(d, v), json_node_get_int(n), "%s: %" PRId64 " vs %" PRId64, path,
                         lite_int(d, v), (int64_t)json_node_get_int(n));
            cr_assert_eq(lite_double(d, v), (double)json_node_get_int(n), "%s: as double", path);
            break;
        case G_TYPE_DOUBLE: {
            double want = json_node_get_double(n), got = lite_double(d, v);
            cr_assert_eq(t, LITE_DOUBLE, "%s: type %d, double expected", path, t);
            cr_assert(memcmp(&got, &want, sizeof got) == 0, "%s: %.17g vs %.17g", path, got, want);
            break;
        }
        case G_TYPE_BOOLEAN:
            cr_assert_eq(t, LITE_BOOL, "%s: type %d, bool expected", path, t);
            cr_assert_eq(lite_bool(d, v), (bool)json_node_get_boolean(n), "%s", path);
            break;
        case G_TYPE_STRING:
            cr_assert_eq(t, LITE_STRING, "%s: type %d, string expected", path, t);
            cr_assert_str_eq(lite_str(d, v), json_node_get_string(n), "%s", path);
            break;
        default:
            cr_assert_fail("%s: json-glib value of type %s", path,
                           g_type_name(json_node_get_value_type(n)));
        }
        cr_assert_eq(lite_len(d, v), 0, "%s: a scalar has no length", path);
        cr_assert_eq(lite_at(d, v, 0), LITE_NONE, "%s: a scalar has no elements", path);
        cr_assert_eq(lite_get(d, v, "x"), LITE_NONE, "%s: lite_get of a scalar", path);
    }
    if (t != LITE_STRING)
        cr_assert_null(lite_str(d, v), "%s: lite_str of a non-string", path);
    if (t != LITE_BOOL)
        cr_assert(!lite_bool(d, v), "%s: lite_bool of a non-bool", path);
    if (t != LITE_INT && t != LITE_DOUBLE)
        cr_assert_eq(lite_double(d, v), 0, "%s: lite_double of a non-number", path);
}

/* `len` bytes of valid JSON: lite_parse_json, lite_doc_parse_json into `reuse` (if given) and
 * lite_from_json_node all give json-glib's tree. */
static void assert_equivalent_len(const char *json, gsize len, LiteDoc *reuse)
{
    g_autoptr(JsonNode) want = glib_parse(json, len);
    cr_assert_not_null(want, "json-glib refused %.*s", (int)MIN(len, 200), json);

    g_autofree char *buf = copy_of(json, len);
    g_autoptr(GError) err = NULL;
    g_autoptr(LiteDoc) d = lite_parse_json(buf, len, "doc", &err);
    cr_assert_not_null(d, "refused %.*s: %s", (int)MIN(len, 200), json,
                       err ? err->message : "no error");
    cr_assert_null(err);
    assert_same_tree(d, lite_root(d), want, "$");

    if (reuse) {
        g_autofree char *buf2 = copy_of(json, len);
        cr_assert(lite_doc_parse_json(reuse, buf2, len, "doc", &err), "%s", err->message);
        assert_same_tree(reuse, lite_root(reuse), want, "$");
    }

    g_autoptr(LiteDoc) from = lite_from_json_node(want);
    assert_same_tree(from, lite_root(from), want, "$");
}

static void assert_equivalent(const char *json)
{
    assert_equivalent_len(json, strlen(json), NULL);
}

/* An error "WHAT:LINE:COL: REASON" on one line; its line and column through *line, *col. */
static void assert_error_form(const GError *err, const char *what, unsigned *line, unsigned *col)
{
    cr_assert_not_null(err, "refused without an error");
    cr_assert(g_error_matches(err, G_IO_ERROR, G_IO_ERROR_INVALID_DATA), "%s", err->message);
    cr_assert_null(strchr(err->message, '\n'), "more than one line: %s", err->message);
    size_t n = strlen(what);
    cr_assert(strncmp(err->message, what, n) == 0 && err->message[n] == ':',
              "'%s' does not start with '%s:'", err->message, what);
    unsigned l = 0, c = 0;
    int used = 0;
    cr_assert(sscanf(err->message + n, ":%u:%u: %n", &l, &c, &used) == 2 && used > 0,
              "'%s': no LINE:COL", err->message);
    cr_assert(err->message[n + (size_t)used] != '\0', "'%s': no reason", err->message);
    cr_assert(l >= 1 && c >= 1, "%s", err->message);
    *line = l;
    *col = c;
}

/* `len` bytes refused with "WHAT:LINE:COL: ...REASON..." by lite_parse_json and by a
 * reused document. */
static void assert_refused_len(const char *json, gsize len, unsigned line, unsigned col,
                               const char *reason)
{
    for (int reuse = 0; reuse < 2; reuse++) {
        g_autofree char *buf = copy_of(json, len);
        g_autoptr(GError) err = NULL;
        g_autoptr(LiteDoc) d = NULL;
        if (reuse) {
            d = lite_doc_new();
            cr_assert(!lite_doc_parse_json(d, buf, len, "in.json", &err), "accepted %.*s",
                      (int)MIN(len, 80), json);
            cr_assert_eq(lite_root(d), LITE_NONE);
        } else {
            d = lite_parse_json(buf, len, "in.json", &err);
            cr_assert_null(d, "accepted %.*s, expected \"%s\"", (int)MIN(len, 80), json, reason);
        }
        unsigned l, c;
        assert_error_form(err, "in.json", &l, &c);
        cr_assert(l == line && c == col, "'%s': expected at %u:%u (input %.*s)", err->message, line,
                  col, (int)MIN(len, 80), json);
        cr_assert(strstr(err->message, reason), "'%s' does not say '%s'", err->message, reason);
    }
}

#define REFUSED(lit, line, col, reason) assert_refused_len(lit, sizeof(lit) - 1, line, col, reason)

static char *read_fr_dump(gsize *len)
{
    g_autoptr(GError) err = NULL;
    char *text = NULL;
    cr_assert(g_file_get_contents(FR_DUMP, &text, len, &err), "%s", err ? err->message : "");
    return text;
}

/* ---- accepted: the same tree as json-glib's ---- */

Test(lite, empty_containers)
{
    const char *docs[] = {"{}",
                          "[]",
                          "[[]]",
                          "[{}]",
                          "{\"a\":[]}",
                          "{\"a\":{}}",
                          "[[],[[]],{},[{}],{\"b\":[]}]",
                          "{\"a\":{\"b\":{\"c\":[]}}, \"d\":[]}"};
    for (size_t i = 0; i < G_N_ELEMENTS(docs); i++)
        assert_equivalent(docs[i]);
}

Test(lite, scalars_at_the_root)
{
    const char *docs[] = {"0",    "-0",    "-1",   "42",   "1.5",   "-2e-3", "1E10",
                          "true", "false", "null", "\"\"", "\"s\"", " 7 ",   "\n\"x\"\t"};
    for (size_t i = 0; i < G_N_ELEMENTS(docs); i++)
        assert_equivalent(docs[i]);
}

Test(lite, numbers)
{
    assert_equivalent("[0, -0, -1, 1, 9223372036854775807, -9223372036854775808, 1.5, -2e-3, "
                      "1E10, 1e+2, 1E-2, 0.0, -0.0, 0e0, 123456789, -987654321012, "
                      "3.141592653589793, 1e-300, 1.7976931348623157e308, 2.5E-1, 0.1, "
                      "4294967296, -4294967297, 1e22, 100]");
    /* the edges, by value */
    char s[] = "[9223372036854775807, -9223372036854775808, -0, -0.0, 1E10, -2e-3]";
    g_autoptr(GError) err = NULL;
    g_autoptr(LiteDoc) d = lite_parse_json(s, sizeof s - 1, "n", &err);
    cr_assert_not_null(d, "%s", err ? err->message : "");
    LiteRef a = lite_root(d);
    cr_assert_eq(lite_type(d, lite_at(d, a, 0)), LITE_INT);
    cr_assert_eq(lite_int(d, lite_at(d, a, 0)), INT64_MAX);
    cr_assert_eq(lite_int(d, lite_at(d, a, 1)), INT64_MIN);
    cr_assert_eq(lite_type(d, lite_at(d, a, 2)), LITE_INT);
    cr_assert_eq(lite_int(d, lite_at(d, a, 2)), 0);
    cr_assert_eq(lite_type(d, lite_at(d, a, 3)), LITE_DOUBLE, "-0.0 is a double");
    cr_assert(signbit(lite_double(d, lite_at(d, a, 3))), "-0.0 keeps its sign");
    cr_assert_eq(lite_type(d, lite_at(d, a, 4)), LITE_DOUBLE, "an exponent makes a double");
    cr_assert_eq(lite_double(d, lite_at(d, a, 4)), 1e10);
    cr_assert_eq(lite_double(d, lite_at(d, a, 5)), -2e-3);
}

Test(lite, booleans_and_null)
{
    assert_equivalent("[true,false,null,[true],{\"t\":true,\"f\":false,\"n\":null}]");
}

Test(lite, string_escapes)
{
    assert_equivalent("[\"\\\"\", \"\\\\\", \"\\/\", \"\\b\", \"\\f\", \"\\n\", \"\\r\", \"\\t\","
                      " \"\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\\u00e9\", \"caf\\u00E9\","
                      " \"\\ud83d\\ude00\", \"\\uD83D\\uDE00!\", \"a\\u0041\\u20ac\\uffff\","
                      " \"\\u0001\\u001f\\u007f\", \"x\\ny\", \"http:\\/\\/a\\/b\","
                      " \"\\\\u00e9 stays\", \"\\u10FFFF\", \"\\udbff\\udfff\"]");
    /* the bytes, by value */
    char s[] = "[\"\\u00e9\", \"\\ud83d\\ude00\", \"\\/\\\"\\\\\", \"a\\tb\", \"\\udbff\\udfff\"]";
    g_autoptr(GError) err = NULL;
    g_autoptr(LiteDoc) d = lite_parse_json(s, sizeof s - 1, "s", &err);
    cr_assert_not_null(d, "%s", err ? err->message : "");
    LiteRef a = lite_root(d);
    cr_assert_str_eq(lite_str(d, lite_at(d, a, 0)), "\xc3\xa9");
    cr_assert_str_eq(lite_str(d, lite_at(d, a, 1)), "\xf0\x9f\x98\x80");
    cr_assert_str_eq(lite_str(d, lite_at(d, a, 2)), "/\"\\");
    cr_assert_str_eq(lite_str(d, lite_at(d, a, 3)), "a\tb");
    cr_assert_str_eq(lite_str(d, lite_at(d, a, 4)), "\xf4\x8f\xbf\xbf");
}

Test(lite, raw_utf8_in_strings)
{
    assert_equivalent("{\"caf\xc3\xa9\": \"\xc3\xa9t\xc3\xa9\", \"emoji\": \"\xf0\x9f\x98\x80\","
                      " \"mixed\": \"\xe2\x82\xac\\n\xe2\x82\xac\\u00e9\xc3\xa9\","
                      " \"del\": \"\x7f\", \"max\": \"\xf4\x8f\xbf\xbf\"}");
}

Test(lite, keys_with_escapes)
{
    assert_equivalent("{\"k\\u00e9y\\n\": 1, \"a\\\"b\": 2, \"\\ud83d\\ude00\": 3, \"x\": 4}");
}

Test(lite, long_strings)
{
    /* one without escapes (the in-place fast path), one with escapes and UTF-8 throughout */
    g_autoptr(GString) j = g_string_new("[\"");
    for (int i = 0; i < 100000; i++)
        g_string_append_c(j, (char)('a' + i % 26));
    g_string_append(j, "\", \"");
    for (int i = 0; i < 20000; i++) {
        static const char *const parts[] = {
            "x",    "\\n", "\\u00e9", "\xc3\xa9", "\\ud83d\\ude00", "\xf0\x9f\x98\x80",
            "\\\"", "\\/", "\\\\",    " "};
        g_string_append(j, parts[i % G_N_ELEMENTS(parts)]);
    }
    g_string_append(j, "\"]");
    assert_equivalent_len(j->str, j->len, NULL);
}

Test(lite, nesting)
{
    assert_equivalent("{\"a\":[1,{\"b\":[2,[3,{\"c\":{\"d\":[[[4]]]}}]]}],\"e\":{\"f\":{}},"
                      "\"g\":[[],{},[{}]]}");
    /* 100 levels, arrays and objects alternating, json-glib's tree */
    g_autoptr(GString) j = g_string_new("");
    for (int i = 0; i < 100; i++)
        g_string_append(j, i % 2 ? "{\"k\":" : "[1,");
    g_string_append(j, "\"deep\"");
    for (int i = 99; i >= 0; i--)
        g_string_append(j, i % 2 ? "}" : ",2]");
    assert_equivalent_len(j->str, j->len, NULL);
}

Test(lite, nesting_512_levels_accepted)
{
    for (int obj = 0; obj < 2; obj++) {
        g_autoptr(GString) j = g_string_new("");
        for (int i = 0; i < LITE_MAX_DEPTH; i++)
            g_string_append(j, obj ? "{\"k\":" : "[");
        g_string_append(j, "7");
        for (int i = 0; i < LITE_MAX_DEPTH; i++)
            g_string_append(j, obj ? "}" : "]");
        g_autofree char *buf = copy_of(j->str, j->len);
        g_autoptr(GError) err = NULL;
        g_autoptr(LiteDoc) d = lite_parse_json(buf, j->len, "deep", &err);
        cr_assert_not_null(d, "%s", err ? err->message : "");
        LiteRef v = lite_root(d);
        for (int i = 0; i < LITE_MAX_DEPTH; i++) {
            cr_assert_eq(lite_type(d, v), obj ? LITE_OBJECT : LITE_ARRAY, "level %d", i);
            cr_assert_eq(lite_len(d, v), 1);
            v = obj ? lite_get(d, v, "k") : lite_at(d, v, 0);
        }
        cr_assert_eq(lite_int(d, v), 7);
    }
}

Test(lite, whitespace_everywhere)
{
    assert_equivalent(" \t\n\r{ \n\"a\" \t: \r\n[ 1 , 2 ,\n\t3 ] , \"b\" : { } ,\"c\"\n:\n"
                      "\"x\" , \"d\" : [ ] , \"e\" : [ true , false , null , -1.5e+3 ] }\n\r\t ");
}

Test(lite, flight_recorder_dump)
{
    gsize len;
    g_autofree char *text = read_fr_dump(&len);
    assert_equivalent_len(text, len, NULL);
}

Test(lite, accessors_of_absent_values)
{
    char s[] = "{\"a\":1}";
    g_autoptr(LiteDoc) d = lite_parse_json(s, sizeof s - 1, "x", NULL);
    cr_assert_not_null(d);
    LiteRef none = lite_get(d, lite_root(d), "b");
    cr_assert_eq(none, LITE_NONE);
    cr_assert_eq(lite_type(d, none), LITE_NULL);
    cr_assert_eq(lite_len(d, none), 0);
    cr_assert_eq(lite_at(d, none, 0), LITE_NONE);
    cr_assert_null(lite_key_at(d, none, 0));
    cr_assert_eq(lite_get(d, none, "a"), LITE_NONE);
    cr_assert(!lite_bool(d, none));
    cr_assert_eq(lite_int(d, none), 0);
    cr_assert_eq(lite_double(d, none), 0);
    cr_assert_null(lite_str(d, none));
}

/* The tree from json-glib of nodes built by hand (no parser): strings with NULs cut, a NULL
 * node. */
Test(lite, from_json_node_by_hand)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "i");
    json_builder_add_int_value(b, -5);
    json_builder_set_member_name(b, "d");
    json_builder_add_double_value(b, 0.25);
    json_builder_set_member_name(b, "s");
    json_builder_add_string_value(b, "\xc3\xa9");
    json_builder_set_member_name(b, "a");
    json_builder_begin_array(b);
    json_builder_add_null_value(b);
    json_builder_add_boolean_value(b, TRUE);
    json_builder_end_array(b);
    json_builder_set_member_name(b, "e");
    json_builder_begin_object(b);
    json_builder_end_object(b);
    json_builder_end_object(b);
    g_autoptr(JsonNode) n = json_builder_get_root(b);
    g_autoptr(LiteDoc) d = lite_from_json_node(n);
    assert_same_tree(d, lite_root(d), n, "$");

    g_autoptr(LiteDoc) null_doc = lite_from_json_node(NULL);
    cr_assert_eq(lite_type(null_doc, lite_root(null_doc)), LITE_NULL);
}

/* ---- duplicate keys ---- */

Test(lite, duplicate_keys_last_wins)
{
    char s[] = "{\"a\":1,\"b\":2,\"a\":3,\"c\":{\"x\":\"first\",\"x\":\"second\"},\"a\":4}";
    g_autoptr(GError) err = NULL;
    g_autoptr(LiteDoc) d = lite_parse_json(s, sizeof s - 1, "dup", &err);
    cr_assert_not_null(d, "%s", err ? err->message : "");
    LiteRef o = lite_root(d);
    cr_assert_eq(lite_len(d, o), 5, "every member is kept");
    cr_assert_str_eq(lite_key_at(d, o, 0), "a");
    cr_assert_str_eq(lite_key_at(d, o, 2), "a");
    cr_assert_eq(lite_int(d, lite_at(d, o, 0)), 1, "members in input order");
    cr_assert_eq(lite_int(d, lite_get(d, o, "a")), 4, "the last occurrence");
    cr_assert_eq(lite_int(d, lite_get(d, o, "b")), 2);
    cr_assert_str_eq(lite_str(d, lite_get(d, lite_get(d, o, "c"), "x")), "second");

    /* json-glib agrees on the value */
    const char *dup = "{\"a\":1,\"b\":2,\"a\":3,\"a\":4}";
    g_autoptr(JsonNode) n = glib_parse(dup, strlen(dup));
    cr_assert_not_null(n);
    cr_assert_eq(json_object_get_int_member(json_node_get_object(n), "a"), 4);
}

/* ---- refused: "WHAT:LINE:COL: REASON" ---- */

Test(lite, trailing_garbage_refused)
{
    REFUSED("[1] x", 1, 5, "data after the JSON value");
    REFUSED("{}{}", 1, 3, "data after the JSON value");
    REFUSED("1 2", 1, 3, "data after the JSON value");
    REFUSED("\"a\"\n\n  ,", 3, 3, "data after the JSON value");
    REFUSED("truex", 1, 5, "data after the JSON value");
    REFUSED("[1]\0", 1, 4, "data after the JSON value");
}

Test(lite, unterminated_refused)
{
    REFUSED("\"abc", 1, 5, "the input ends inside a string");
    REFUSED("[\"abc", 1, 6, "the input ends inside a string");
    REFUSED("\"a\\n", 1, 5, "the input ends inside a string");
    REFUSED("\"\xc3\xa9", 1, 4, "the input ends inside a string");
    REFUSED("\"\\", 1, 3, "the input ends inside an escape");
    REFUSED("[", 1, 2, "the input ends where a value is expected");
    REFUSED("[1,", 1, 4, "the input ends where a value is expected");
    REFUSED("[1, 2", 1, 6, "',' or ']' expected");
    REFUSED("[[1]", 1, 5, "',' or ']' expected");
    REFUSED("{", 1, 2, "an object key must be a string");
    REFUSED("{\"a\"", 1, 5, "':' expected after an object key");
    REFUSED("{\"a\":", 1, 6, "the input ends where a value is expected");
    REFUSED("{\"a\": 1", 1, 8, "',' or '}' expected");
    REFUSED("{\"a\": {}", 1, 9, "',' or '}' expected");
}

Test(lite, missing_colon_or_comma_refused)
{
    REFUSED("{\"a\" 1}", 1, 6, "':' expected after an object key");
    REFUSED("{\"a\",1}", 1, 5, "':' expected after an object key");
    REFUSED("[1 2]", 1, 4, "',' or ']' expected");
    REFUSED("{\"a\":1 \"b\":2}", 1, 8, "',' or '}' expected");
    REFUSED("[1:2]", 1, 3, "',' or ']' expected");
    REFUSED("[1}", 1, 3, "',' or ']' expected");
    REFUSED("{\"a\":1]", 1, 7, "',' or '}' expected");
}

Test(lite, malformed_numbers_refused)
{
    REFUSED("01", 1, 1, "a number with a leading zero");
    REFUSED("[-01]", 1, 3, "a number with a leading zero");
    REFUSED("[00]", 1, 2, "a number with a leading zero");
    REFUSED("-", 1, 2, "a malformed number");
    REFUSED("[-a]", 1, 3, "a malformed number");
    REFUSED("+1", 1, 1, "a malformed number");
    REFUSED(".5", 1, 1, "a malformed number");
    REFUSED("1.", 1, 3, "a malformed number (digits after '.')");
    REFUSED("1.e5", 1, 3, "a malformed number (digits after '.')");
    REFUSED("1e", 1, 3, "a malformed number (digits after the exponent)");
    REFUSED("1e+", 1, 4, "a malformed number (digits after the exponent)");
    REFUSED("[1,]", 1, 4, "a malformed number");
    REFUSED("NaN", 1, 1, "a malformed number");
    REFUSED("0x10", 1, 2, "data after the JSON value");
}

Test(lite, integer_overflow_refused)
{
    REFUSED("9223372036854775808", 1, 20, "an integer outside the 64-bit range");
    REFUSED("-9223372036854775809", 1, 21, "an integer outside the 64-bit range");
    REFUSED("18446744073709551616", 1, 21, "an integer outside the 64-bit range");
    REFUSED("[99999999999999999999999999]", 1, 28, "an integer outside the 64-bit range");
}

Test(lite, surrogates_refused)
{
    REFUSED("\"\\ud83d\"", 1, 8, "a lone high surrogate");
    REFUSED("\"\\ud83dx\"", 1, 8, "a lone high surrogate");
    REFUSED("\"\\ud83d", 1, 8, "a lone high surrogate");
    REFUSED("\"\\ud83d\\n\"", 1, 8, "a lone high surrogate");
    REFUSED("\"\\ude00\"", 1, 8, "a lone low surrogate");
    REFUSED("\"\\ude00\\ud83d\"", 1, 8, "a lone low surrogate");
    REFUSED("\"\\ud83d\\u0041\"", 1, 14, "a high surrogate not followed by a low one");
    REFUSED("\"\\ud83d\\ud83d\"", 1, 14, "a high surrogate not followed by a low one");
    REFUSED("\"\\ud83d\\u12\"", 1, 10, "a \\u escape needs four hex digits");
}

Test(lite, nul_escape_refused)
{
    REFUSED("\"\\u0000\"", 1, 8, "\\u0000 inside a string");
    REFUSED("{\"a\\u0000b\": 1}", 1, 10, "\\u0000 inside a string");
}

Test(lite, bad_escapes_refused)
{
    REFUSED("\"\\x\"", 1, 4, "an unknown escape in a string");
    REFUSED("\"\\a\"", 1, 4, "an unknown escape in a string");
    REFUSED("\"\\U00e9\"", 1, 4, "an unknown escape in a string");
    REFUSED("\"\\'\"", 1, 4, "an unknown escape in a string");
    REFUSED("\"\\u12\"", 1, 4, "a \\u escape needs four hex digits");
    REFUSED("\"\\u12G4\"", 1, 4, "a \\u escape needs four hex digits");
    REFUSED("\"\\u", 1, 4, "a \\u escape needs four hex digits");
}

Test(lite, control_characters_refused)
{
    REFUSED("\"a\tb\"", 1, 3, "a control character inside a string");
    REFUSED("\"a\nb\"", 1, 3, "a control character inside a string");
    REFUSED("\"\x1f\"", 1, 2, "a control character inside a string");
    REFUSED("\"\\n\x01\"", 1, 4, "a control character inside a string");
    REFUSED("\"a\0b\"", 1, 3, "a control character inside a string");
    REFUSED("{\"k\x0a\": 1}", 1, 4, "a control character inside a string");
}

Test(lite, invalid_utf8_refused)
{
    REFUSED("\"\xc3\x28\"", 1, 2, "invalid UTF-8 in a string");
    REFUSED("\"ab\xc3\x28\"", 1, 4, "invalid UTF-8 in a string");
    REFUSED("\"\\n\xc3\x28\"", 1, 4, "invalid UTF-8 in a string"); /* after an escape */
    REFUSED("\"\xc3\"", 1, 2, "invalid UTF-8 in a string");        /* truncated */
    REFUSED("\"\\t\xc3\"", 1, 4, "invalid UTF-8 in a string");
    REFUSED("\"\x80\"", 1, 2, "invalid UTF-8 in a string");            /* lone continuation */
    REFUSED("\"\xc0\xaf\"", 1, 2, "invalid UTF-8 in a string");        /* overlong */
    REFUSED("\"\\/\xe0\x80\xaf\"", 1, 4, "invalid UTF-8 in a string"); /* overlong */
    REFUSED("\"\xed\xa0\x80\"", 1, 2, "invalid UTF-8 in a string");    /* a surrogate */
    REFUSED("\"\\b\xed\xa0\x80\"", 1, 4, "invalid UTF-8 in a string");
    REFUSED("\"\xf4\x90\x80\x80\"", 1, 2, "invalid UTF-8 in a string"); /* above U+10FFFF */
    REFUSED("\"\\f\xf8\x88\x80\x80\x80\"", 1, 4, "invalid UTF-8 in a string");
    REFUSED("\"\xff\"", 1, 2, "invalid UTF-8 in a string");
    REFUSED("{\"\xc3\x28\": 1}", 1, 3, "invalid UTF-8 in a string");
    REFUSED("[\xc3\xa9]", 1, 2, "a malformed number"); /* outside a string */
}

Test(lite, nesting_513_levels_refused)
{
    /* arrays, objects, both alternating: refused at the 513th opener */
    for (int kind = 0; kind < 3; kind++) {
        g_autoptr(GString) j = g_string_new("");
        gsize at = 0;
        for (int i = 0; i <= LITE_MAX_DEPTH; i++) {
            bool obj = kind == 1 || (kind == 2 && i % 2);
            at = j->len;
            g_string_append(j, obj ? "{\"k\":" : "[");
        }
        g_string_append(j, "1");
        for (int i = LITE_MAX_DEPTH; i >= 0; i--)
            g_string_append(j, kind == 1 || (kind == 2 && i % 2) ? "}" : "]");
        assert_refused_len(j->str, j->len, 1, (unsigned)at + 1, "nested more than 512 levels");
    }
    /* far deeper: refused, not a stack overflow */
    g_autoptr(GString) j = g_string_new("");
    for (int i = 0; i < 100000; i++)
        g_string_append_c(j, '[');
    assert_refused_len(j->str, j->len, 1, LITE_MAX_DEPTH + 1, "nested more than 512 levels");
}

Test(lite, empty_and_blank_input_refused)
{
    REFUSED("", 1, 1, "the input ends where a value is expected");
    REFUSED(" ", 1, 2, "the input ends where a value is expected");
    REFUSED(" \n\t ", 2, 3, "the input ends where a value is expected");
    REFUSED("\r\n\r\n", 3, 1, "the input ends where a value is expected");
}

Test(lite, non_string_keys_refused)
{
    REFUSED("{1:2}", 1, 2, "an object key must be a string");
    REFUSED("{a:1}", 1, 2, "an object key must be a string");
    REFUSED("{ null: 1}", 1, 3, "an object key must be a string");
    REFUSED("{'a':1}", 1, 2, "an object key must be a string");
    REFUSED("{\"a\":1,}", 1, 8, "an object key must be a string");
    REFUSED("{\"a\":1, [2]:3}", 1, 9, "an object key must be a string");
}

Test(lite, bad_literals_refused)
{
    REFUSED("tru", 1, 1, "an unexpected character (a value expected)");
    REFUSED("nul", 1, 1, "an unexpected character (a value expected)");
    REFUSED("fals", 1, 1, "an unexpected character (a value expected)");
    REFUSED("[tru]", 1, 2, "an unexpected character (a value expected)");
    REFUSED("{\"a\": nul}", 1, 7, "an unexpected character (a value expected)");
    REFUSED("True", 1, 1, "a malformed number");
    REFUSED("nulL", 1, 1, "an unexpected character (a value expected)");
}

/* Line and column count the input as it was, not as strings unescaped in place left it: a
 * "\n" escape must not count as a line break. */
Test(lite, error_position_after_newline_escapes)
{
    REFUSED("[\"a\\nb\", x]", 1, 10, "a malformed number");
    REFUSED("[\"a\\n\\n\\nb\",\n \"\\n\", x]", 2, 8, "a malformed number");
    REFUSED("{\"k\\n\": 1,\n\"v\": \"\\n\\u00e9\"\n  ,}", 3, 4, "an object key must be a string");
    REFUSED("[\"\\n\"\n\"\\n\"]", 2, 1, "',' or ']' expected");
}

Test(lite, error_after_a_multiline_document)
{
    REFUSED("{\n  \"a\": 1,\n  \"b\": [1, 2,\n        3 4]\n}", 4, 11, "',' or ']' expected");
    REFUSED("{\n\t\"a\": \"x\",\r\n\t\"b\": tru\n}", 3, 7, "an unexpected character");
}

/* ---- robustness ---- */

Test(lite, every_prefix_of_a_dump_refused)
{
    gsize len;
    g_autofree char *text = read_fr_dump(&len);
    cr_assert_gt(len, 2000);
    g_autoptr(LiteDoc) reuse = lite_doc_new();
    for (gsize n = 0; n < len; n++) {
        g_autofree char *buf = copy_of(text, n);
        g_autoptr(GError) err = NULL;
        g_autoptr(LiteDoc) d = lite_parse_json(buf, n, "fr", &err);
        cr_assert_null(d, "a prefix of %zu bytes (of %zu) accepted", n, len);
        unsigned line, col;
        assert_error_form(err, "fr", &line, &col);
        cr_assert(line == 1 && col >= 1 && col <= n + 1, "prefix %zu: %s", n, err->message);

        g_autofree char *buf2 = copy_of(text, n);
        g_clear_error(&err);
        cr_assert(!lite_doc_parse_json(reuse, buf2, n, "fr", &err), "prefix %zu accepted", n);
        assert_error_form(err, "fr", &line, &col);
        cr_assert_eq(lite_root(reuse), LITE_NONE);
    }
    assert_equivalent_len(text, len, reuse);
}

/* A small document touching every construct: each byte replaced by each of the 256 values
 * parses (to json-glib's tree: the parser accepts only valid JSON) or is refused cleanly. */
Test(lite, every_single_byte_mutation_handled)
{
    /* keys two bytes apart at least, so that no mutation makes a duplicate (json-glib keeps
     * one member of those) */
    static const char doc[] = "{\"arr\": [1, -2.5e3, true, false, null],\n"
                              " \"str\": \"x\\n\\u00e9\\ud83d\\ude00\\/\xc3\xa9\xf0\x9f\x98\x80\","
                              " \"obj\": {\"kk\": {}, \"ll\": []},\n"
                              " \"neg\": -0, \"big\": 9223372036854775807, \"exp\": 1E-2}";
    gsize len = sizeof doc - 1;
    assert_equivalent_len(doc, len, NULL);
    g_autoptr(LiteDoc) reuse = lite_doc_new();
    unsigned accepted = 0, refused = 0;
    for (gsize at = 0; at < len; at++) {
        for (int byte = 0; byte < 256; byte++) {
            if ((unsigned char)doc[at] == byte)
                continue;
            char mutated[sizeof doc];
            memcpy(mutated, doc, len);
            mutated[at] = (char)byte;
            g_autofree char *buf = copy_of(mutated, len), *buf2 = copy_of(mutated, len);
            g_autoptr(GError) err = NULL;
            g_autoptr(LiteDoc) d = lite_parse_json(buf, len, "mut", &err);
            bool ok2 = lite_doc_parse_json(reuse, buf2, len, "mut", NULL);
            cr_assert_eq(d != NULL, ok2, "byte %zu = 0x%02x: fresh and reused disagree", at, byte);
            if (d) {
                cr_assert_null(err);
                accepted++;
                g_autoptr(JsonNode) oracle = glib_parse(mutated, len);
                cr_assert_not_null(oracle, "byte %zu = 0x%02x: accepted, json-glib refuses", at,
                                   byte);
                g_autofree char *where = g_strdup_printf("$(byte %zu = 0x%02x)", at, byte);
                assert_same_tree(d, lite_root(d), oracle, where);
                assert_same_tree(reuse, lite_root(reuse), oracle, where);
            } else {
                refused++;
                unsigned line, col;
                assert_error_form(err, "mut", &line, &col);
                cr_assert(line <= 4, "%s", err->message);
            }
        }
    }
    cr_log_info("mutations: %u accepted, %u refused", accepted, refused);
    cr_assert_gt(accepted, 100);
    cr_assert_gt(refused, 100);
}

/* ---- reuse ---- */

Test(lite, reused_document)
{
    gsize frlen;
    g_autofree char *fr = read_fr_dump(&frlen);
    struct {
        const char *json;
        gsize len;
        bool ok;
    } seq[] = {
        {"{\"a\": [1, 2, {\"b\": \"\\u00e9\"}]}", 0, true},
        {fr, frlen, true}, /* larger: the arenas grow */
        {"[1, 2, {\"x\": [3, 4", 0, false},
        {"[]", 0, true},
        {"{\"k\": \"v\", \"k\": \"w\"}", 0, true},
        {"\"\\ud83d\"", 0, false},
        {"[[[[[[\"deep\"]]]]], {\"a\": {\"b\": {}}}]", 0, true},
        {"", 0, false},
        {"7", 0, true},
        {"{\"a\": [1, 2, {\"b\": \"\\u00e9\"}]}", 0, true},
    };
    g_autoptr(LiteDoc) d = lite_doc_new();
    for (size_t i = 0; i < G_N_ELEMENTS(seq); i++) {
        gsize len = seq[i].len ? seq[i].len : strlen(seq[i].json);
        /* each input freed before the next parse: the document must not look back at it */
        g_autofree char *buf = copy_of(seq[i].json, len);
        g_autoptr(GError) err = NULL;
        bool ok = lite_doc_parse_json(d, buf, len, "seq", &err);
        cr_assert_eq(ok, seq[i].ok, "input %zu: %s", i, err ? err->message : "accepted");
        if (!ok) {
            unsigned line, col;
            assert_error_form(err, "seq", &line, &col);
            cr_assert_eq(lite_root(d), LITE_NONE, "input %zu: a refused parse holds nothing", i);
            cr_assert_eq(lite_type(d, lite_root(d)), LITE_NULL);
            continue;
        }
        cr_assert_null(err);
        if (i == 4) { /* duplicates: json-glib's tree has one member */
            cr_assert_eq(lite_len(d, lite_root(d)), 2);
            cr_assert_str_eq(lite_str(d, lite_get(d, lite_root(d), "k")), "w");
            continue;
        }
        g_autoptr(JsonNode) want = glib_parse(seq[i].json, len);
        g_autofree char *where = g_strdup_printf("input %zu: $", i);
        assert_same_tree(d, lite_root(d), want, where);
    }
}

/* Parsing into a document made by lite_parse_json or lite_from_json_node replaces its tree. */
Test(lite, parse_into_any_document)
{
    char first[] = "[1, [2, 3], {\"a\": 4}]";
    g_autoptr(LiteDoc) a = lite_parse_json(first, sizeof first - 1, "a", NULL);
    cr_assert_not_null(a);
    const char *other = "{\"x\": [1, {\"y\": \"z\"}], \"w\": [[], {}]}";
    g_autoptr(JsonNode) n = glib_parse(other, strlen(other));
    cr_assert_not_null(n);
    g_autoptr(LiteDoc) b = lite_from_json_node(n);

    const char *next = "{\"q\": [true, null, \"\\u00e9\", [5, 6, [7]], {\"r\": {\"s\": 8}}]}";
    g_autoptr(JsonNode) want = glib_parse(next, strlen(next));
    LiteDoc *docs[] = {a, b};
    for (size_t i = 0; i < G_N_ELEMENTS(docs); i++) {
        g_autofree char *buf = copy_of(next, strlen(next));
        g_autoptr(GError) err = NULL;
        cr_assert(lite_doc_parse_json(docs[i], buf, strlen(next), "next", &err), "doc %zu: %s", i,
                  err ? err->message : "");
        assert_same_tree(docs[i], lite_root(docs[i]), want, "$");
    }
}
