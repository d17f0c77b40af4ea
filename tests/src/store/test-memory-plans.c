/* tests/src/store/test-memory-plans.c — memory plans' tensor lists stored once per distinct list
 * (schema 11: memory_plans, rank_memory_plans and the memory_items view), read back shared, and
 * a version-10 file's memory_items table read as it is and upgraded with its rows. */
#include <criterion/criterion.h>
#include <sqlite3.h>

#include "../../../src/store/query.h"
#include "store-test.h"

static char *tmp_db(void)
{
    return store_test_path("ranksim-plans-XXXXXX", "t.db");
}

static int64_t scalar(Store *s, const char *sql)
{
    return store_test_scalar(s, sql);
}

static void exec(Store *s, const char *sql)
{
    cr_assert_eq(sqlite3_exec(store_db(s), sql, NULL, NULL, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(store_db(s)));
}

static void item_free(gpointer p)
{
    ModelMemItem *it = p;
    g_free(it->name);
    g_free(it->shape);
    g_free(it->dtype);
    g_free(it);
}

/* A list of `n` weight tensors named PREFIX.0 .. PREFIX.n-1, item i of (i + 1) MiB. */
static GPtrArray *items(const char *prefix, int n)
{
    GPtrArray *a = g_ptr_array_new_with_free_func(item_free);
    for (int i = 0; i < n; i++) {
        ModelMemItem *it = g_new0(ModelMemItem, 1);
        it->component = i % 2 ? MODEL_MEM_QUANT_SCALES : MODEL_MEM_WEIGHTS;
        it->name = g_strdup_printf("%s.%d", prefix, i);
        it->shape = g_strdup_printf("[%d]", i + 1);
        it->dtype = g_strdup("bf16");
        it->bytes = (uint64_t)(i + 1) << 20;
        g_ptr_array_add(a, it);
    }
    return a;
}

/* 4 ranks: ranks 0, 1 and 3 share list A (3 items), rank 2 has list B (5 items). */
static ModelMemPlan *plan(void)
{
    ModelMemPlan *m = g_new0(ModelMemPlan, 1);
    m->world = 4;
    m->ranks = g_new0(ModelMemRank, 4);
    m->hbm_bytes = 80ULL << 30;
    m->requested_bytes = 72ULL << 30;
    m->utilization = 0.9;
    GPtrArray *a = items("a", 3), *b = items("b", 5);
    m->ranks[0].items = a;
    m->ranks[1].items = g_ptr_array_ref(a);
    m->ranks[3].items = g_ptr_array_ref(a);
    m->ranks[2].items = b;
    return m;
}

static int64_t store_with_plan(Store *s, const ModelMemPlan *m)
{
    g_autoptr(GError) err = NULL;
    SchedProgram *p = sched_program_new(4);
    SchedOp op = sched_op_compute(sched_program_name(p, "attn"), 1000, 8);
    for (uint32_t r = 0; r < 4; r++)
        sched_program_set_ops(p, r, &op, 1);
    StoreRunInfo info = {.name = "plans", .kind = "model", .scenario = "text", .timeline = "full"};
    StoreRun *r = store_run_begin(s, &info, p, &err);
    cr_assert_not_null(r, "%s", err ? err->message : "");
    store_run_set_memory(r, m);
    SchedConfig c = sched_config_default();
    c.record = store_run_record;
    c.record_data = r;
    g_autoptr(SchedOutcome) o = sched_engine_run(p, &c);
    int64_t id = store_run_finish(r, o, "ok", 0, 1.0, &err);
    cr_assert_geq(id, 1, "%s", err ? err->message : "");
    sched_program_free(p);
    return id;
}

/* The items read back for run `id` are lists A and B by rank; `shared`: ranks 0, 1, 3 hold
 * one array. */
static void expect_items(Store *s, int64_t id, bool shared)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(ModelMemPlan) m = query_memory_load(s, id, true, &err);
    cr_assert_not_null(m, "%s", err ? err->message : "");
    cr_assert_eq(m->world, 4);
    for (uint32_t r = 0; r < 4; r++) {
        const GPtrArray *a = m->ranks[r].items;
        cr_assert_not_null(a, "rank %u", r);
        cr_assert_eq(a->len, r == 2 ? 5u : 3u, "rank %u", r);
        for (guint i = 0; i < a->len; i++) {
            const ModelMemItem *it = g_ptr_array_index(a, i);
            g_autofree char *name = g_strdup_printf("%s.%u", r == 2 ? "b" : "a", i);
            cr_assert_str_eq(it->name, name);
            cr_assert_eq(it->bytes, (uint64_t)(i + 1) << 20);
            cr_assert_eq(it->component, i % 2 ? MODEL_MEM_QUANT_SCALES : MODEL_MEM_WEIGHTS);
        }
    }
    if (shared) {
        cr_assert_eq(m->ranks[0].items, m->ranks[1].items);
        cr_assert_eq(m->ranks[0].items, m->ranks[3].items);
    }
}

Test(memory_plans, a_shared_list_is_stored_once_and_read_back_shared)
{
    g_autofree char *path = tmp_db();
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) s = store_open(path, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    g_autoptr(ModelMemPlan) m = plan();
    int64_t id = store_with_plan(s, m);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM memory_plans"), 3 + 5);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM rank_memory_plans"), 4);
    /* plans numbered by the first rank that has them */
    cr_assert_eq(scalar(s, "SELECT plan FROM rank_memory_plans WHERE rank = 3"), 0);
    cr_assert_eq(scalar(s, "SELECT plan FROM rank_memory_plans WHERE rank = 2"), 1);
    /* the view gives every rank's rows, as the table of version 10 held them */
    cr_assert_eq(scalar(s, "SELECT count(*) FROM memory_items"), 3 * 3 + 5);
    cr_assert_eq(scalar(s, "SELECT sum(bytes) FROM memory_items WHERE rank = 1"), (1 + 2 + 3)
                                                                                      << 20);
    expect_items(s, id, true);
    /* a sweep without --memory-detail: no list, no row */
    for (uint32_t r = 0; r < 4; r++)
        g_clear_pointer(&m->ranks[r].items, g_ptr_array_unref);
    int64_t bare = store_with_plan(s, m);
    g_autofree char *q = g_strdup_printf(
        "SELECT count(*) FROM rank_memory_plans WHERE run_id = %" G_GINT64_FORMAT, bare);
    cr_assert_eq(scalar(s, q), 0);
}

/* Turns run 1's plans back into version 10's memory_items table (rows in rank, item order). */
static void make_version_10(Store *s)
{
    exec(s, "CREATE TABLE old_items AS SELECT run_id, rank, component, name, shape, dtype, bytes"
            " FROM memory_items ORDER BY run_id, rank, idx;"
            "DROP VIEW memory_items; DROP TABLE memory_plans; DROP TABLE rank_memory_plans;"
            "CREATE TABLE memory_items(run_id INTEGER NOT NULL, rank INTEGER NOT NULL,"
            " component TEXT NOT NULL, name TEXT NOT NULL, shape TEXT, dtype TEXT,"
            " bytes INTEGER NOT NULL);"
            "INSERT INTO memory_items SELECT * FROM old_items ORDER BY rowid;"
            "DROP TABLE old_items;"
            "CREATE INDEX memory_items_run ON memory_items(run_id, rank);"
            "PRAGMA user_version = 10;");
}

Test(memory_plans, a_version_10_file_is_read_as_it_is_and_upgraded_with_its_rows)
{
    g_autofree char *path = tmp_db();
    {
        g_autoptr(Store) s = store_open(path, NULL);
        cr_assert_not_null(s);
        g_autoptr(ModelMemPlan) m = plan();
        store_with_plan(s, m);
        make_version_10(s);
    }
    {
        /* a reader never upgrades: it reads the table */
        g_autoptr(GError) err = NULL;
        g_autoptr(Store) ro = store_open_readonly(path, &err);
        cr_assert_not_null(ro, "%s", err ? err->message : "");
        cr_assert_eq(scalar(ro, "PRAGMA user_version"), 10);
        expect_items(ro, 1, false);
    }
    g_autoptr(GError) err = NULL;
    g_autoptr(Store) s = store_open(path, &err);
    cr_assert_not_null(s, "%s", err ? err->message : "");
    cr_assert_eq(scalar(s, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM sqlite_master WHERE name = 'memory_items'"
                           " AND type = 'view'"),
                 1);
    /* one plan per rank, the rows and their order kept */
    cr_assert_eq(scalar(s, "SELECT count(*) FROM rank_memory_plans WHERE plan = rank"), 4);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM memory_items"), 3 * 3 + 5);
    expect_items(s, 1, false);
    /* and a new run is stored shared */
    g_autoptr(ModelMemPlan) m = plan();
    int64_t id = store_with_plan(s, m);
    cr_assert_eq(id, 2);
    cr_assert_eq(scalar(s, "SELECT count(*) FROM memory_plans WHERE run_id = 2"), 3 + 5);
    expect_items(s, 2, true);
}
