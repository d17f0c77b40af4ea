/* tests/src/input/test-hardware.c — the hardware loader: every preset loads, passes
 * net_hardware_check and carries the figures of shared/reference/hardware.md and doc/devices.md
 * (golden figures, binary vs decimal units, the HBM the software stack reports, platform and
 * arch); bad hardware files give one SCENARIO_ERROR naming file, line and key; files without the
 * newer keys still load; overrides change exactly what they name. */
#include <criterion/criterion.h>
#include <glib.h>
#include <string.h>

#include "../../../src/input/hardware.h"
#include "../../../src/input/scenario.h"

#define GIB (UINT64_C(1) << 30)
#define TIB 1099511627776.0
/* The bytes of `hbm_visible_gib: x`, rounded as the loader rounds (a constant expression). */
#define VISIBLE_GIB(x) ((uint64_t)((x)*1073741824.0 + 0.5))
#define NATIVE(...) native_mask((const NetPeakDtype[]){__VA_ARGS__, NET_PEAK_COUNT})

static uint32_t native_mask(const NetPeakDtype *d)
{
    uint32_t m = 0;
    for (; *d != NET_PEAK_COUNT; d++)
        m |= NET_DTYPE_BIT(*d);
    return m;
}

/* Loads preset `name` (an alias keeps its preset's name) and checks it. */
static NetHardware preset(const char *name)
{
    NetHardware hw;
    GError *err = NULL;
    cr_assert(hardware_load_preset(name, &hw, &err), "%s: %s", name, err ? err->message : "");
    char why[256];
    cr_assert(net_hardware_check(&hw, why, sizeof why), "%s: %s", name, why);
    cr_assert_not_null(hardware_preset_file(name));
    cr_assert_str_eq(hw.name, hardware_preset_file(name));
    return hw;
}

static NetHardware load_ok(const char *yaml)
{
    NetHardware hw;
    GError *err = NULL;
    cr_assert(hardware_load_string(yaml, -1, "hw.yaml", &hw, &err), "unexpected error: %s",
              err ? err->message : "");
    return hw;
}

#define assert_has(msg, sub)                                                                       \
    cr_assert(strstr((msg), (sub)) != NULL, "expected \"%s\" in: %s", (sub), (msg))

/* Expects an error with `code` whose one-line message starts with "LOC: " (and names key
 * 'KEY' unless NULL) and contains `also` (unless NULL). */
static void expect_error(const char *yaml, int code, const char *loc, const char *key,
                         const char *also)
{
    NetHardware hw;
    GError *err = NULL;
    cr_assert_not(hardware_load_string(yaml, -1, "hw.yaml", &hw, &err), "expected an error:\n%s",
                  yaml);
    cr_assert_not_null(err);
    cr_assert_eq(err->domain, SCENARIO_ERROR);
    cr_assert_eq(err->code, code, "code %d (wanted %d): %s", err->code, code, err->message);
    cr_assert_null(strchr(err->message, '\n'), "multi-line message: %s", err->message);
    g_autofree char *prefix = g_strdup_printf("%s: ", loc);
    cr_assert(g_str_has_prefix(err->message, prefix), "expected prefix \"%s\" in: %s", prefix,
              err->message);
    if (key) {
        g_autofree char *k = g_strdup_printf("key '%s'", key);
        assert_has(err->message, k);
    }
    if (also)
        assert_has(err->message, also);
    g_error_free(err);
}

static void expect_invalid(const char *yaml, const char *loc, const char *key, const char *also)
{
    expect_error(yaml, SCENARIO_ERROR_INVALID, loc, key, also);
}

/* ---- presets: golden figures ---- */

Test(presets, h100)
{
    NetHardware hw = preset("h100");
    cr_assert_eq(hw.devices_per_node, 8);
    cr_assert_eq(hw.peak_flops[NET_PEAK_BF16], 989e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_FP16], 989e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_FP8], 1979e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_INT8], 1979e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_FP4], 0);
    cr_assert_eq(hw.platform, NET_PLATFORM_CUDA);
    cr_assert_eq(hw.arch, NET_ARCH_SM90);
    cr_assert_eq(hw.native_dtypes,
                 NATIVE(NET_PEAK_BF16, NET_PEAK_FP16, NET_PEAK_FP8, NET_PEAK_INT8));
    /* what torch / vLLM report on an H100 80GB (vllm-omni#1144, llm-d), not the datasheet's 80 GB
     * (74.51 GiB) */
    cr_assert_eq(hw.hbm_visible_bytes, VISIBLE_GIB(79.18));
    cr_assert_eq(hw.hbm_bytes, hw.hbm_visible_bytes);
    cr_assert_eq(hw.hbm_datasheet_bytes, UINT64_C(80000000000)); /* 80 GB decimal */
    cr_assert_eq(hw.hbm_bw_bytes_per_s, 3350e9);
    cr_assert_eq(hw.compute_units, 132); /* SMs, Hopper whitepaper */
    cr_assert_eq(hw.clock_hz, 1980e6);
    cr_assert_eq(hw.l2_bytes, UINT64_C(52430000)); /* 50 MiB, as decimal MB to 2 places */
    cr_assert_eq(hw.launch_latency_ns, 6600);
    cr_assert_eq(hw.n_tiers, 2);
    cr_assert_str_eq(hw.tiers[0].name, "nvlink");
    cr_assert_eq(hw.tiers[0].span_devices, 8);
    cr_assert_eq(hw.tiers[0].bw_bytes_per_s, 450e9);
    cr_assert_eq(hw.tiers[0].latency_ns, 600);
    cr_assert_eq(hw.tiers[0].shared_bw_bytes_per_s, 0);
    cr_assert_str_eq(hw.tiers[1].name, "ib");
    cr_assert_eq(hw.tiers[1].span_devices, 0);
    cr_assert_eq(hw.tiers[1].bw_bytes_per_s, 50e9); /* 400 Gb/s */
    cr_assert_eq(hw.tiers[1].latency_ns, 2700);
    cr_assert_eq(hw.tiers[1].shared_bw_bytes_per_s, 400e9); /* 8 NICs x 50 GB/s */
}

Test(presets, h200)
{
    NetHardware hw = preset("h200");
    cr_assert_eq(hw.peak_flops[NET_PEAK_BF16], 989e12); /* dense; 1,979 is the sparse figure */
    cr_assert_eq(hw.peak_flops[NET_PEAK_FP8], 1979e12);
    cr_assert_eq(hw.hbm_datasheet_bytes, UINT64_C(141000000000));
    cr_assert_eq(hw.hbm_bytes, VISIBLE_GIB(139.81));
    cr_assert_eq(hw.arch, NET_ARCH_SM90);
    cr_assert_eq(hw.hbm_bw_bytes_per_s, 4800e9);
    cr_assert_eq(hw.n_tiers, 2);
    cr_assert_eq(hw.tiers[0].bw_bytes_per_s, 450e9);
    cr_assert_eq(hw.tiers[1].bw_bytes_per_s, 50e9);
    cr_assert_eq(hw.tiers[1].shared_bw_bytes_per_s, 400e9);
}

Test(presets, b200)
{
    NetHardware hw = preset("b200");
    cr_assert_eq(hw.devices_per_node, 8);
    cr_assert_eq(hw.peak_flops[NET_PEAK_BF16], 2250e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_FP8], 4500e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_INT8], 4500e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_FP4], 9000e12);
    cr_assert_eq(hw.hbm_datasheet_bytes, UINT64_C(180000000000)); /* 180 GB usable, decimal */
    /* 178.35 GiB as the driver reports it (pytorch/ao#4002; seed 004, doc/validation.md) */
    cr_assert_eq(hw.hbm_visible_bytes, VISIBLE_GIB(178.35));
    cr_assert_eq(hw.hbm_bytes, VISIBLE_GIB(178.35));
    cr_assert_gt(hw.hbm_bytes, hw.hbm_datasheet_bytes);
    cr_assert_eq(hw.platform, NET_PLATFORM_CUDA);
    cr_assert_eq(hw.arch, NET_ARCH_SM100);
    cr_assert(hw.native_dtypes & NET_DTYPE_BIT(NET_PEAK_FP4));
    cr_assert_eq(hw.hbm_bw_bytes_per_s, 8000e9);
    cr_assert_eq(hw.launch_latency_ns, 6600);
    cr_assert_str_eq(hw.tiers[0].name, "nvlink");
    cr_assert_eq(hw.tiers[0].bw_bytes_per_s, 900e9); /* NVLink5 */
    cr_assert_eq(hw.tiers[1].bw_bytes_per_s, 50e9);
}

/* Blackwell Ultra: dense peaks of NVIDIA's Blackwell Ultra datasheet (sparse figures halved),
 * INT8 cut to a few percent of FP8, 800 Gb/s ConnectX-8 per GPU. */
Test(presets, b300)
{
    NetHardware hw = preset("b300");
    cr_assert_eq(hw.devices_per_node, 8);
    cr_assert_eq(hw.arch, NET_ARCH_SM103);
    cr_assert_eq(hw.peak_flops[NET_PEAK_BF16], 2250e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_FP8], 4500e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_FP4], 14000e12); /* dense, not the sparse 18 PF */
    cr_assert_eq(hw.peak_flops[NET_PEAK_INT8], 150e12);
    cr_assert_eq(hw.hbm_datasheet_bytes, UINT64_C(270000000000));
    cr_assert_eq(hw.hbm_bytes, VISIBLE_GIB(267.69)); /* totalGlobalMem 274,113 MiB */
    cr_assert_eq(hw.hbm_bw_bytes_per_s, 7700e9);
    cr_assert_eq(hw.compute_units, 148);
    cr_assert_eq(hw.clock_hz, 2032e6);
    cr_assert_eq(hw.l2_bytes, UINT64_C(132640000));
    cr_assert_eq(hw.n_tiers, 2);
    cr_assert_eq(hw.tiers[0].span_devices, 8);
    cr_assert_eq(hw.tiers[0].bw_bytes_per_s, 900e9);
    cr_assert_eq(hw.tiers[1].bw_bytes_per_s, 100e9);
    cr_assert_eq(hw.tiers[1].shared_bw_bytes_per_s, 800e9);
}

Test(presets, gb300)
{
    NetHardware hw = preset("gb300");
    cr_assert_eq(hw.devices_per_node, 4); /* a compute tray */
    cr_assert_eq(hw.arch, NET_ARCH_SM103);
    cr_assert(hw.native_dtypes & NET_DTYPE_BIT(NET_PEAK_FP4));
    cr_assert_eq(hw.peak_flops[NET_PEAK_BF16], 2500e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_FP8], 5000e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_FP4], 15000e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_INT8], 165e12);
    cr_assert_eq(hw.hbm_datasheet_bytes, UINT64_C(279000000000));
    cr_assert_eq(hw.hbm_bytes, VISIBLE_GIB(276.64)); /* estimated, doc/devices.md */
    cr_assert_gt(hw.hbm_bytes, preset("b300").hbm_bytes);
    cr_assert_eq(hw.hbm_bw_bytes_per_s, 8000e9);
    cr_assert_eq(hw.compute_units, 152);
    cr_assert_eq(hw.clock_hz, 0);               /* none published */
    cr_assert_eq(hw.tiers[0].span_devices, 72); /* the NVL72 rack */
    cr_assert_eq(hw.tiers[0].bw_bytes_per_s, 900e9);
    cr_assert_eq(hw.tiers[1].bw_bytes_per_s, 100e9);
    cr_assert_eq(hw.tiers[1].shared_bw_bytes_per_s, 400e9);
}

Test(presets, ascend_910b)
{
    NetHardware hw = preset("ascend-910b");
    cr_assert_eq(hw.devices_per_node, 8);
    cr_assert_eq(hw.peak_flops[NET_PEAK_BF16], 353.9e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_INT8], 752e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_FP8], 0);
    cr_assert_eq(hw.hbm_datasheet_bytes, 64 * GIB); /* binary: msModeling's GB is 2^30 */
    cr_assert_eq(hw.hbm_bytes, VISIBLE_GIB(60.96)); /* torch_npu on 910B2 (vllm-ascend#1127) */
    cr_assert_eq(hw.platform, NET_PLATFORM_NPU);
    cr_assert_eq(hw.arch, NET_ARCH_ASCEND910B);
    cr_assert_eq(hw.native_dtypes, NATIVE(NET_PEAK_BF16, NET_PEAK_FP16, NET_PEAK_INT8));
    cr_assert_eq(hw.hbm_bw_bytes_per_s, 1.6 * TIB);
    cr_assert_gt(hw.hbm_bw_bytes_per_s, 1.75e12); /* not 1.6e12 */
    cr_assert_eq(hw.n_tiers, 2);
    cr_assert_str_eq(hw.tiers[0].name, "hccs");
    cr_assert_eq(hw.tiers[0].span_devices, 8);
    cr_assert_eq(hw.tiers[0].bw_bytes_per_s, 196e9);
    cr_assert_eq(hw.tiers[0].latency_ns, 500);
    cr_assert_str_eq(hw.tiers[1].name, "roce");
    cr_assert_eq(hw.tiers[1].bw_bytes_per_s, 25e9);
    cr_assert_eq(hw.tiers[1].latency_ns, 1500);
}

Test(presets, ascend_910c)
{
    NetHardware hw = preset("ascend-910c");
    cr_assert_eq(hw.devices_per_node, 16); /* dies */
    cr_assert_eq(hw.hbm_datasheet_bytes, 64 * GIB);
    cr_assert_eq(hw.hbm_bytes, VISIBLE_GIB(61.27)); /* torch_npu per A3 die (sglang#29838) */
    cr_assert_eq(hw.platform, NET_PLATFORM_NPU);
    cr_assert_eq(hw.arch, NET_ARCH_ASCEND910_93);
    cr_assert_eq(hw.n_tiers, 4);
    static const char *const names[] = {"d2d", "ub", "ub2", "roce"};
    static const uint32_t spans[] = {2, 16, 768, 0};
    static const double bw[] = {224e9, 196e9, 196e9, 24.5e9};
    static const int64_t lat[] = {200, 500, 5500, 5500};
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(hw.tiers[i].name, names[i]);
        cr_assert_eq(hw.tiers[i].span_devices, spans[i], "tier %s", names[i]);
        cr_assert_eq(hw.tiers[i].bw_bytes_per_s, bw[i], "tier %s", names[i]);
        cr_assert_eq(hw.tiers[i].latency_ns, lat[i], "tier %s", names[i]);
    }
    cr_assert_eq(net_hardware_tier(&hw, "ub2"), 2);
}

/* The presets added with the device table (doc/devices.md): platform, arch, node size, the HBM
 * the model budgets with (the visible figure where one is cited), a peak and the first tier. */
Test(presets, device_table)
{
    static const struct {
        const char *name;
        NetPlatform platform;
        NetArch arch;
        uint32_t devices_per_node;
        uint64_t hbm_bytes;
        double bf16_tflops;
        const char *tier0;
        double tier0_gb_s;
    } want[] = {
        {"gb200", NET_PLATFORM_CUDA, NET_ARCH_SM100, 4, VISIBLE_GIB(184), 2500, "nvlink", 900},
        {"a100-80gb", NET_PLATFORM_CUDA, NET_ARCH_SM80, 8, VISIBLE_GIB(79.32), 312, "nvlink", 300},
        {"a100-40gb", NET_PLATFORM_CUDA, NET_ARCH_SM80, 8, UINT64_C(42298834944), 312, "nvlink",
         300},
        {"h20", NET_PLATFORM_CUDA, NET_ARCH_SM90, 8, VISIBLE_GIB(95.33), 148, "nvlink", 450},
        {"l40s", NET_PLATFORM_CUDA, NET_ARCH_SM89, 8, UINT64_C(47803596800), 362.05, "pcie", 32},
        {"rtx4090", NET_PLATFORM_CUDA, NET_ARCH_SM89, 8, VISIBLE_GIB(23.68), 165.2, "pcie", 32},
        {"mi300x", NET_PLATFORM_ROCM, NET_ARCH_GFX942, 8, UINT64_C(201310208) * 1024, 1307.4,
         "xgmi", 448},
        {"mi325x", NET_PLATFORM_ROCM, NET_ARCH_GFX942, 8, UINT64_C(268419072) * 1024, 1307.4,
         "xgmi", 448},
        {"mi355x", NET_PLATFORM_ROCM, NET_ARCH_GFX950, 8, UINT64_C(301973504) * 1024, 2500, "xgmi",
         537.6},
        {"gaudi3", NET_PLATFORM_HPU, NET_ARCH_GAUDI3, 8, 128 * GIB, 1835, "roce", 525},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
        NetHardware hw = preset(want[i].name);
        cr_assert_eq(hw.platform, want[i].platform, "%s", want[i].name);
        cr_assert_eq(hw.arch, want[i].arch, "%s", want[i].name);
        cr_assert_eq(hw.devices_per_node, want[i].devices_per_node, "%s", want[i].name);
        cr_assert_eq(hw.hbm_bytes, want[i].hbm_bytes, "%s: %" G_GUINT64_FORMAT, want[i].name,
                     hw.hbm_bytes);
        cr_assert_eq(hw.peak_flops[NET_PEAK_BF16], want[i].bf16_tflops * 1e12, "%s", want[i].name);
        cr_assert_str_eq(hw.tiers[0].name, want[i].tier0, "%s", want[i].name);
        cr_assert_eq(hw.tiers[0].bw_bytes_per_s, want[i].tier0_gb_s * 1e9, "%s", want[i].name);
        cr_assert_eq(hw.tiers[hw.n_tiers - 1].span_devices, 0, "%s", want[i].name);
    }
    /* native dtypes follow the arch: FP8 from sm89 / gfx942, FP4 from sm100 / gfx950, none on
     * Ampere or Ascend */
    cr_assert_not(preset("a100-80gb").native_dtypes & NET_DTYPE_BIT(NET_PEAK_FP8));
    cr_assert(preset("l40s").native_dtypes & NET_DTYPE_BIT(NET_PEAK_FP8));
    cr_assert_not(preset("l40s").native_dtypes & NET_DTYPE_BIT(NET_PEAK_FP4));
    cr_assert(preset("mi300x").native_dtypes & NET_DTYPE_BIT(NET_PEAK_FP8));
    cr_assert_not(preset("mi300x").native_dtypes & NET_DTYPE_BIT(NET_PEAK_FP4));
    cr_assert(preset("mi355x").native_dtypes & NET_DTYPE_BIT(NET_PEAK_FP4));
    cr_assert(preset("gb200").native_dtypes & NET_DTYPE_BIT(NET_PEAK_FP4));
    cr_assert_eq(preset("gb200").tiers[0].span_devices, 72); /* the NVL72 rack */
    /* Gaudi 3: no visible figure found, the datasheet capacity stands */
    NetHardware g = preset("gaudi3");
    cr_assert_eq(g.hbm_visible_bytes, 0);
    cr_assert_eq(g.hbm_bytes, g.hbm_datasheet_bytes);
}

/* Every preset (aliases too) loads, passes the check and is self-consistent: the arch belongs to
 * the platform, every dtype with a peak is native, hbm_bytes is the visible figure when there is
 * one. */
Test(presets, every_preset_loads)
{
    size_t n = 0;
    for (const char *const *name = hardware_preset_names(); *name; name++, n++) {
        NetHardware hw = preset(*name);
        cr_assert_neq(hw.arch, NET_ARCH_UNKNOWN, "%s", *name);
        cr_assert_eq(net_arch_platform(hw.arch), hw.platform, "%s", *name);
        cr_assert_neq(hw.native_dtypes, 0, "%s", *name);
        for (int d = 0; d < NET_PEAK_COUNT; d++)
            if (hw.peak_flops[d] > 0)
                cr_assert(hw.native_dtypes & NET_DTYPE_BIT(d), "%s: %s", *name,
                          net_peak_dtype_name((NetPeakDtype)d));
        cr_assert_gt(hw.hbm_datasheet_bytes, 0, "%s", *name);
        cr_assert_eq(hw.hbm_bytes,
                     hw.hbm_visible_bytes ? hw.hbm_visible_bytes : hw.hbm_datasheet_bytes, "%s",
                     *name);
        cr_assert_gt(hw.hbm_bw_bytes_per_s, 0, "%s", *name);
        cr_assert_gt(hw.peak_flops[NET_PEAK_BF16], 0, "%s", *name);
    }
    cr_assert_eq(n, 21);
}

Test(presets, spellings_users_ask_for)
{
    cr_assert_str_eq(hardware_preset_file("h100-sxm"), "h100");
    cr_assert_str_eq(hardware_preset_file("h100-sxm5"), "h100");
    cr_assert_str_eq(hardware_preset_file("h20-141gb"), "h20-141g");
    g_autofree char *also = hardware_preset_aliases("h100");
    cr_assert_str_eq(also, "h100-sxm, h100-sxm5");
    cr_assert_null(hardware_preset_aliases("b200"));
    /* the H800 is the H100 SXM5 with NVLink cut to 200 GB/s per direction; the PCIe part has
     * no NVLink tier and less compute */
    NetHardware h800, h100, pcie;
    cr_assert(hardware_load_preset("h800", &h800, NULL));
    cr_assert(hardware_load_preset("h100", &h100, NULL));
    cr_assert(hardware_load_preset("h100-pcie", &pcie, NULL));
    cr_assert_eq(h800.peak_flops[NET_PEAK_BF16], h100.peak_flops[NET_PEAK_BF16]);
    cr_assert_lt(h800.tiers[0].bw_bytes_per_s, h100.tiers[0].bw_bytes_per_s / 2);
    cr_assert_str_eq(pcie.tiers[0].name, "pcie");
    cr_assert_lt(pcie.peak_flops[NET_PEAK_BF16], h100.peak_flops[NET_PEAK_BF16]);
}

Test(presets, alias_a100_is_a100_80gb)
{
    cr_assert_str_eq(hardware_preset_file("a100"), "a100-80gb");
    cr_assert_str_eq(hardware_preset_file("a100-80gb"), "a100-80gb");
    cr_assert_null(hardware_preset_file("a100-80"));
    cr_assert(hardware_is_preset("a100"));
    NetHardware alias = preset("a100"), full = preset("a100-80gb");
    cr_assert_str_eq(alias.name, "a100-80gb");
    cr_assert(memcmp(&alias, &full, sizeof alias) == 0);
}

/* The preset list, the files in net/presets and the embedded copies agree. */
Test(presets, list_matches_files_and_embedded_copies)
{
    g_autofree char *dir = g_build_filename(RANKSIM_SOURCE_DIR, "net", "presets", NULL);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    cr_assert_not_null(d);
    const char *const *names = hardware_preset_names();
    cr_assert_str_eq(names[0], HARDWARE_DEFAULT_PRESET);
    size_t listed = 0, aliases = 0;
    for (; names[listed]; listed++)
        if (strcmp(hardware_preset_file(names[listed]), names[listed]) != 0)
            aliases++;
    size_t files = 0;
    const char *f;
    while ((f = g_dir_read_name(d))) {
        if (!g_str_has_suffix(f, ".yaml"))
            continue;
        files++;
        g_autofree char *name = g_strndup(f, strlen(f) - strlen(".yaml"));
        cr_assert(hardware_is_preset(name), "net/presets/%s is not in the preset list", f);
        cr_assert_str_eq(hardware_preset_file(name), name, "net/presets/%s is an alias's name", f);
        g_autofree char *path = g_build_filename(dir, f, NULL);
        NetHardware from_file, embedded = preset(name);
        GError *err = NULL;
        cr_assert(hardware_load_file(path, &from_file, &err), "%s", err ? err->message : "");
        cr_assert(memcmp(&from_file, &embedded, sizeof from_file) == 0,
                  "%s differs from the embedded copy (rebuild?)", f);
    }
    cr_assert_eq(aliases, 1);
    cr_assert_eq(files, listed - aliases);
}

#define ALL_PRESETS                                                                                \
    "h100, h200, b200, gb200, b300, gb300, a100-80gb, a100, a100-40gb, h20, h20-141g, h800, h100-pcie, l40s, rtx4090, "       \
    "mi300x, mi325x, mi355x, gaudi3, ascend-910b, ascend-910c"

Test(presets, unknown_preset_lists_the_valid_ones)
{
    NetHardware hw;
    GError *err = NULL;
    cr_assert_not(hardware_load_preset("h1000", &hw, &err));
    cr_assert_eq(err->domain, SCENARIO_ERROR);
    cr_assert_eq(err->code, SCENARIO_ERROR_INVALID);
    assert_has(err->message,
               "unknown hardware preset 'h1000'; did you mean 'h100'? (valid: " ALL_PRESETS ")");
    g_clear_error(&err);
    cr_assert_not(hardware_load_preset("tpu", &hw, &err));
    assert_has(err->message, "valid: " ALL_PRESETS);
    g_clear_error(&err);
    cr_assert_not(hardware_load_preset("mi300", &hw, &err));
    assert_has(err->message, "did you mean 'mi300x'?");
    g_clear_error(&err);
}

/* ---- hardware files ---- */

static const char minimal[] = "devices_per_node: 4\n"
                              "launch_latency_us: 5\n"
                              "tiers:\n"
                              "  - {name: pcie, span: node, bandwidth_gb_s: 32, latency_us: 1}\n"
                              "  - {name: eth, span: cluster, bandwidth_gb_s: 12.5, latency_us: "
                              "10}\n";

Test(hardware_file, minimal_file_and_defaults)
{
    NetHardware hw = load_ok(minimal);
    cr_assert_str_eq(hw.name, "hw"); /* from the file name */
    cr_assert_eq(hw.devices_per_node, 4);
    cr_assert_eq(hw.launch_latency_ns, 5000);
    for (int i = 0; i < NET_PEAK_COUNT; i++)
        cr_assert_eq(hw.peak_flops[i], 0);
    cr_assert_eq(hw.hbm_bytes, 0);
    cr_assert_eq(hw.hbm_visible_bytes, 0);
    cr_assert_eq(hw.hbm_datasheet_bytes, 0);
    cr_assert_eq(hw.hbm_bw_bytes_per_s, 0);
    cr_assert_eq(hw.compute_units, 0); /* unknown: no wave quantization */
    cr_assert_eq(hw.l2_bytes, 0);
    /* the defaults of a file without the device keys: cuda, arch unknown, bf16 and fp16 */
    cr_assert_eq(hw.platform, NET_PLATFORM_CUDA);
    cr_assert_eq(hw.arch, NET_ARCH_UNKNOWN);
    cr_assert_eq(hw.native_dtypes, NATIVE(NET_PEAK_BF16, NET_PEAK_FP16));
    cr_assert_eq(hw.n_tiers, 2);
    cr_assert_eq(hw.tiers[0].span_devices, 4);
    cr_assert_eq(hw.tiers[1].span_devices, 0);
    cr_assert_eq(hw.tiers[1].bw_bytes_per_s, 12.5e9);
    cr_assert_eq(hw.tiers[1].shared_bw_bytes_per_s, 0);
}

Test(hardware_file, units)
{
    NetHardware hw = load_ok("name: u\ndevices_per_node: 8\nlaunch_latency_us: 0\n"
                             "compute_tflops: {bf16: 1.5, fp4: 0}\n"
                             "hbm_gib: 1.5\nhbm_bandwidth_tib_s: 2\n"
                             "tiers:\n"
                             "  - {name: a, span: 2, bandwidth_gb_s: 1, latency_us: 0.0005}\n"
                             "  - {name: b, span: 8, bandwidth_gb_s: 1e3, latency_us: 1}\n"
                             "  - {name: c, span: 32, bandwidth_gb_s: 2, latency_us: 1, "
                             "shared_bandwidth_gb_s: 0}\n"
                             "  - {name: d, span: cluster, bandwidth_gb_s: 2, latency_us: 1, "
                             "shared_bandwidth_gb_s: 16}\n");
    cr_assert_str_eq(hw.name, "u");
    cr_assert_eq(hw.peak_flops[NET_PEAK_BF16], 1.5e12);
    cr_assert_eq(hw.native_dtypes,
                 NATIVE(NET_PEAK_BF16)); /* arch unknown: the dtypes with a peak */
    cr_assert_eq(hw.hbm_bytes, 3 * GIB / 2);
    cr_assert_eq(hw.hbm_datasheet_bytes, 3 * GIB / 2);
    cr_assert_eq(hw.hbm_bw_bytes_per_s, 2 * TIB);
    cr_assert_eq(hw.tiers[0].latency_ns, 1); /* 0.5 ns rounds to 1 */
    cr_assert_eq(hw.tiers[1].bw_bytes_per_s, 1e12);
    cr_assert_eq(hw.tiers[2].span_devices, 32);
    cr_assert_eq(hw.tiers[3].shared_bw_bytes_per_s, 16e9);
    hw = load_ok("devices_per_node: 8\nlaunch_latency_us: 0\nhbm_gb: 1.5\n"
                 "hbm_bandwidth_gb_s: 2\ndescription: free text\n"
                 "tiers: [{name: a, span: cluster, bandwidth_gb_s: 1, latency_us: 0}]\n");
    cr_assert_eq(hw.hbm_bytes, UINT64_C(1500000000));
    cr_assert_eq(hw.hbm_bw_bytes_per_s, 2e9);
    cr_assert_eq(hw.n_tiers, 1);
}

/* A hardware file written before the device keys existed (the h100 preset as it was) loads:
 * cuda, arch unknown, native = the dtypes with a peak, HBM = the datasheet figure. */
Test(hardware_file, old_file_without_device_keys)
{
    NetHardware hw =
        load_ok("name: old-h100\n"
                "devices_per_node: 8\n"
                "compute_tflops: {bf16: 989, fp16: 989, fp8: 1979, int8: 1979}\n"
                "hbm_gb: 80\n"
                "hbm_bandwidth_gb_s: 3350\n"
                "launch_latency_us: 6.6\n"
                "tiers:\n"
                "  - {name: nvlink, span: node, bandwidth_gb_s: 450, latency_us: 0.6}\n"
                "  - {name: ib, span: cluster, bandwidth_gb_s: 50, latency_us: 2.7,\n"
                "     shared_bandwidth_gb_s: 400}\n");
    cr_assert_eq(hw.platform, NET_PLATFORM_CUDA);
    cr_assert_eq(hw.arch, NET_ARCH_UNKNOWN);
    cr_assert_eq(hw.native_dtypes,
                 NATIVE(NET_PEAK_BF16, NET_PEAK_FP16, NET_PEAK_FP8, NET_PEAK_INT8));
    cr_assert_eq(hw.hbm_bytes, UINT64_C(80000000000));
    cr_assert_eq(hw.hbm_datasheet_bytes, UINT64_C(80000000000));
    cr_assert_eq(hw.hbm_visible_bytes, 0);
    char why[256];
    cr_assert(net_hardware_check(&hw, why, sizeof why), "%s", why);
}

#define BASE_FILE                                                                                  \
    "devices_per_node: 8\nlaunch_latency_us: 1\n"                                                  \
    "tiers: [{name: a, span: cluster, bandwidth_gb_s: 1, latency_us: 0}]\n"

Test(hardware_file, visible_hbm)
{
    NetHardware hw = load_ok(BASE_FILE "hbm_gb: 80\nhbm_visible_gib: 79.18\n");
    cr_assert_eq(hw.hbm_datasheet_bytes, UINT64_C(80000000000));
    cr_assert_eq(hw.hbm_visible_bytes, VISIBLE_GIB(79.18));
    cr_assert_eq(hw.hbm_bytes, VISIBLE_GIB(79.18)); /* the visible figure wins */
    hw = load_ok(BASE_FILE "hbm_visible_bytes: 206141652992\n");
    cr_assert_eq(hw.hbm_bytes, UINT64_C(206141652992));
    cr_assert_eq(hw.hbm_datasheet_bytes, 0);
    hw = load_ok(BASE_FILE "hbm_visible_bytes: 2.5e9\n"); /* integral in exponent form */
    cr_assert_eq(hw.hbm_bytes, UINT64_C(2500000000));

    expect_invalid(BASE_FILE "hbm_visible_gib: 79\nhbm_visible_bytes: 85000000000\n", "hw.yaml:5",
                   "hbm_visible_bytes",
                   "the visible HBM capacity is given twice; keep one of hbm_visible_gib (GiB) and "
                   "hbm_visible_bytes (bytes)");
    expect_invalid(BASE_FILE "compute_units: -1\n", "hw.yaml:4", "compute_units", NULL);
    expect_invalid(BASE_FILE "compute_units: 1.5\n", "hw.yaml:4", "compute_units", NULL);
    expect_invalid(BASE_FILE "l2_mb: x\n", "hw.yaml:4", "l2_mb", NULL);
    expect_invalid(BASE_FILE "hbm_visible_gib: 0\n", "hw.yaml:4", "hbm_visible_gib",
                   "0 is out of range; valid: a number > 0 and <= 1e+06 GiB as torch reports it");
    expect_invalid(BASE_FILE "hbm_visible_gib: \"79.18\"\n", "hw.yaml:4", "hbm_visible_gib",
                   "without quotes");
    expect_invalid(BASE_FILE "hbm_visible_bytes: 79.5\n", "hw.yaml:4", "hbm_visible_bytes",
                   "expected an integer, got 79.5");
    expect_invalid(BASE_FILE "hbm_visible_bytes: 0\n", "hw.yaml:4", "hbm_visible_bytes",
                   "out of range; valid: 1..");
    expect_invalid(
        BASE_FILE "hbm_gib_visible: 79\n", "hw.yaml:4", "hbm_gib_visible",
        "unknown key in the hardware file; valid: name, description, devices_per_node, "
        "platform, arch, native_dtypes, compute_tflops, hbm_gb, hbm_gib, hbm_visible_gib, "
        "hbm_visible_bytes,");
}

Test(hardware_file, platform_and_arch)
{
    NetHardware hw = load_ok(BASE_FILE "platform: rocm\narch: gfx942\n");
    cr_assert_eq(hw.platform, NET_PLATFORM_ROCM);
    cr_assert_eq(hw.arch, NET_ARCH_GFX942);
    cr_assert_eq(hw.native_dtypes, net_arch_native_dtypes(NET_ARCH_GFX942));
    hw = load_ok(BASE_FILE "arch: gfx950\n"); /* the arch implies its platform */
    cr_assert_eq(hw.platform, NET_PLATFORM_ROCM);
    cr_assert(hw.native_dtypes & NET_DTYPE_BIT(NET_PEAK_FP4));
    hw = load_ok(BASE_FILE "platform: npu\n");
    cr_assert_eq(hw.platform, NET_PLATFORM_NPU);
    cr_assert_eq(hw.arch, NET_ARCH_UNKNOWN);
    hw = load_ok(BASE_FILE "platform: hpu\narch: unknown\n");
    cr_assert_eq(hw.platform, NET_PLATFORM_HPU);
    hw = load_ok(BASE_FILE "platform: xpu\narch: pvc\n");
    cr_assert_eq(hw.arch, NET_ARCH_PVC);
    for (int a = 1; a < NET_ARCH_COUNT; a++) {
        g_autofree char *y = g_strdup_printf(BASE_FILE "arch: %s\n", net_arch_name((NetArch)a));
        hw = load_ok(y);
        cr_assert_eq(hw.arch, (NetArch)a);
        cr_assert_eq(hw.platform, net_arch_platform((NetArch)a));
    }

    expect_invalid(BASE_FILE "platform: cdua\n", "hw.yaml:4", "platform",
                   "unknown value 'cdua'; did you mean 'cuda'? (valid: cuda, rocm, npu, hpu, xpu)");
    expect_invalid(BASE_FILE "platform: 3\n", "hw.yaml:4", "platform",
                   "unknown value '3'; valid: cuda, rocm, npu, hpu, xpu");
    expect_invalid(BASE_FILE "arch: sm_90\n", "hw.yaml:4", "arch",
                   "unknown value 'sm_90'; did you mean 'sm90'? (valid: unknown, sm80, sm86, sm89, "
                   "sm90, sm100, sm103, sm120, gfx90a, gfx942, gfx950, ascend910b, ascend910_93, "
                   "gaudi2, gaudi3, pvc, bmg)");
    expect_invalid(BASE_FILE "arch: [sm90]\n", "hw.yaml:4", "arch", "valid: unknown, sm80");
    expect_invalid(BASE_FILE "platform: cuda\narch: gfx942\n", "hw.yaml:5", "arch",
                   "arch 'gfx942' is a rocm arch, but platform is cuda; valid for cuda: unknown, "
                   "sm80, sm86, sm89, sm90, sm100, sm103, sm120");
    expect_invalid(BASE_FILE "arch: sm90\nplatform: npu\n", "hw.yaml:4", "arch",
                   "valid for npu: unknown, ascend910b, ascend910_93");
}

Test(hardware_file, native_dtypes)
{
    NetHardware hw = load_ok(BASE_FILE "native_dtypes: [bf16, fp16, fp8]\n"
                                       "compute_tflops: {bf16: 10, fp8: 20}\n");
    cr_assert_eq(hw.native_dtypes, NATIVE(NET_PEAK_BF16, NET_PEAK_FP16, NET_PEAK_FP8));
    hw = load_ok(BASE_FILE "arch: sm90\nnative_dtypes: [bf16]\n"); /* the list wins */
    cr_assert_eq(hw.native_dtypes, NATIVE(NET_PEAK_BF16));

    expect_invalid(BASE_FILE "native_dtypes: [bf16, fp6]\n", "hw.yaml:4", "native_dtypes",
                   "unknown value 'fp6'; did you mean");
    expect_invalid(BASE_FILE "native_dtypes: [bf16, fp6]\n", "hw.yaml:4", "native_dtypes",
                   "(valid: bf16, fp16, fp8, int8, fp4)");
    expect_invalid(BASE_FILE "native_dtypes: [bf16, bf16]\n", "hw.yaml:4", "native_dtypes",
                   "bf16 is listed twice");
    expect_invalid(BASE_FILE "native_dtypes: []\n", "hw.yaml:4", "native_dtypes",
                   "empty list; give the dtypes the device computes natively");
    expect_invalid(BASE_FILE "native_dtypes: bf16\n", "hw.yaml:4", "native_dtypes",
                   "expected a list");
    /* a peak for a dtype the device does not compute natively: the line of that peak */
    expect_invalid(BASE_FILE "arch: sm80\ncompute_tflops:\n  bf16: 312\n  fp8: 624\n", "hw.yaml:7",
                   "fp8",
                   "compute_tflops gives fp8 a peak of 624 TFLOPS, but fp8 is not a native dtype "
                   "of arch sm80 (native: bf16, fp16, int8); drop the peak, or list fp8 in "
                   "native_dtypes");
    expect_invalid(BASE_FILE "arch: ascend910b\ncompute_tflops: {int8: 752, fp8: 1}\n", "hw.yaml:5",
                   "fp8", "not a native dtype of arch ascend910b");
    expect_invalid(BASE_FILE "native_dtypes: [bf16]\ncompute_tflops: {int8: 8}\n", "hw.yaml:5",
                   "int8", "int8 a peak of 8 TOPS, but int8 is not a native dtype of this device");
}

Test(hardware_file, missing_required_fields)
{
    expect_invalid("# x\nlaunch_latency_us: 5\ntiers: []\n", "hw.yaml:2", "devices_per_node",
                   "missing; a hardware file needs devices_per_node");
    expect_invalid("devices_per_node: 8\ntiers: []\n", "hw.yaml:1", "launch_latency_us", "missing");
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 5\n", "hw.yaml:1", "tiers", "missing");
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 5\ntiers:\n"
                   "  - {name: a, span: node, latency_us: 1}\n",
                   "hw.yaml:4", "bandwidth_gb_s", "missing; tier 'a' needs bandwidth_gb_s");
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 5\ntiers:\n"
                   "  - {span: node, bandwidth_gb_s: 1, latency_us: 1}\n",
                   "hw.yaml:4", "name", "missing; a tier needs name");
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 5\ntiers:\n"
                   "  - name: a\n    span: cluster\n    bandwidth_gb_s: 1\n",
                   "hw.yaml:4", "latency_us", "missing");
}

Test(hardware_file, bad_values)
{
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 5\ntiers:\n"
                   "  - {name: a, span: node, bandwidth_gb_s: 1, latency_us: 1}\n"
                   "  - {name: b, span: cluster, bandwidth_gb_s: -50, latency_us: 1}\n",
                   "hw.yaml:5", "bandwidth_gb_s",
                   "-50 is out of range; valid: a number > 0 and <= 1e+06 GB/s");
    expect_invalid("devices_per_node: 0\n", "hw.yaml:1", "devices_per_node", "valid: 1..1048576");
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: -1\n", "hw.yaml:2", "launch_latency_us",
                   "out of range");
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 1\nhbm_gb: \"80\"\n", "hw.yaml:3",
                   "hbm_gb", "without quotes");
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 1\nhbm_gb: 80\nhbm_gib: 80\n",
                   "hw.yaml:4", "hbm_gib", "HBM capacity is given twice");
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 1\ncompute_tflops: {bf16: -1}\n",
                   "hw.yaml:3", "bf16", "out of range");
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 1\ncompute_tflops: {bf61: 1}\n",
                   "hw.yaml:3", "bf61", "valid: bf16, fp16, fp8, int8, fp4");
    expect_invalid("name: a-name-that-is-far-too-long-for-the-fixed-size-buffer\n", "hw.yaml:1",
                   "name", "longer than 47 bytes");
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 1\ntiers:\n"
                   "  - {name: a, span: nod, bandwidth_gb_s: 1, latency_us: 1}\n",
                   "hw.yaml:4", "span", "did you mean 'node'? (valid: node, cluster");
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 1\ntiers:\n"
                   "  - {name: a, span: 0, bandwidth_gb_s: 1, latency_us: 1}\n",
                   "hw.yaml:4", "span", "write span: cluster");
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 1\ntiers: {a: 1}\n", "hw.yaml:3",
                   "tiers", "expected a list, got a mapping");
}

Test(hardware_file, unknown_keys_get_suggestions)
{
    expect_invalid("devices_per_nodes: 8\n", "hw.yaml:1", "devices_per_nodes",
                   "unknown key in the hardware file; did you mean 'devices_per_node'?");
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 5\ntiers:\n"
                   "  - {name: a, span: node, bandwith_gb_s: 1, latency_us: 1}\n",
                   "hw.yaml:4", "bandwith_gb_s",
                   "unknown key in a tier; did you mean 'bandwidth_gb_s'? (valid: name, span, "
                   "bandwidth_gb_s, latency_us, shared_bandwidth_gb_s)");
    expect_invalid("hbm_tb: 8\n", "hw.yaml:1", "hbm_tb", "did you mean 'hbm_gb'?");
}

Test(hardware_file, tier_structure_is_checked)
{
    /* spans not widening: the error points at the offending tier */
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 5\ntiers:\n"
                   "  - {name: a, span: node, bandwidth_gb_s: 1, latency_us: 1}\n"
                   "  - {name: b, span: 4, bandwidth_gb_s: 1, latency_us: 1}\n"
                   "  - {name: c, span: cluster, bandwidth_gb_s: 1, latency_us: 1}\n",
                   "hw.yaml:5", "tiers", "tier 'b': span 4 must be a larger multiple");
    /* the last tier must span the cluster */
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 5\ntiers:\n"
                   "  - {name: a, span: node, bandwidth_gb_s: 1, latency_us: 1}\n",
                   "hw.yaml:4", "tiers", "tier 'a': the last tier must span the cluster");
    /* a span that neither divides nor is a multiple of devices_per_node */
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 5\ntiers:\n"
                   "  - {name: a, span: 3, bandwidth_gb_s: 1, latency_us: 1}\n"
                   "  - {name: b, span: cluster, bandwidth_gb_s: 1, latency_us: 1}\n",
                   "hw.yaml:4", "tiers", "tier 'a'");
    /* names must be distinct */
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 5\ntiers:\n"
                   "  - {name: a, span: node, bandwidth_gb_s: 1, latency_us: 1}\n"
                   "  - {name: a, span: cluster, bandwidth_gb_s: 1, latency_us: 1}\n",
                   "hw.yaml:4", "tiers", "tier 'a' is named twice");
    /* tier count */
    expect_invalid("devices_per_node: 8\nlaunch_latency_us: 5\ntiers: []\n", "hw.yaml:3", "tiers",
                   "empty list");
    GString *many = g_string_new("devices_per_node: 1\nlaunch_latency_us: 5\ntiers:\n");
    for (int i = 0; i < NET_MAX_TIERS + 1; i++)
        g_string_append_printf(
            many, "  - {name: t%d, span: %d, bandwidth_gb_s: 1, latency_us: 1}\n", i, 1 << (i + 1));
    expect_invalid(many->str, "hw.yaml:10", "tiers", "7 tiers; at most 6");
    g_string_free(many, TRUE);
}

Test(hardware_file, yaml_problems)
{
    expect_error("", SCENARIO_ERROR_INVALID, "hw.yaml:1", NULL,
                 "the file is empty; expected a mapping with keys name, description, "
                 "devices_per_node");
    expect_error("tiers: [\n", SCENARIO_ERROR_SYNTAX, "hw.yaml:2", NULL, "malformed YAML");
    expect_error("a: 1\n---\nb: 2\n", SCENARIO_ERROR_INVALID, "hw.yaml:2", NULL,
                 "a hardware file holds exactly one");
    expect_error("- 1\n", SCENARIO_ERROR_INVALID, "hw.yaml:1", NULL, "the top level is a list");
}

Test(hardware_file, io_error)
{
    NetHardware hw;
    GError *err = NULL;
    cr_assert_not(hardware_load_file("/nonexistent/ranksim/hw.yaml", &hw, &err));
    cr_assert_eq(err->domain, SCENARIO_ERROR);
    cr_assert_eq(err->code, SCENARIO_ERROR_IO);
    assert_has(err->message, "/nonexistent/ranksim/hw.yaml: cannot read the hardware file");
    g_error_free(err);
}

/* ---- overrides ---- */

/* Applies the overrides mapping written in `yaml` (the document's top level) to preset
 * `base`. Returns whether that worked; *msg gets the error message (caller frees). */
static bool override(const char *base, const char *yaml, NetHardware *hw, char **msg)
{
    static const char *const keys[] = {"whatever", NULL};
    GError *err = NULL;
    *hw = preset(base);
    YamlDoc doc = {.file = "o.yaml", .what = "test file", .top_keys = keys, .error = &err};
    g_autoptr(YamlDocNode) root = yamldoc_parse(&doc, yaml, strlen(yaml));
    cr_assert_not_null(root, "%s", err ? err->message : "");
    static const char *const skip[] = {"preset", NULL};
    bool ok = hardware_apply_overrides(&doc, root, "hardware", skip, hw);
    cr_assert(ok == (err == NULL));
    *msg = err ? g_strdup(err->message) : NULL;
    if (err) {
        cr_assert_null(strchr(err->message, '\n'), "multi-line message: %s", err->message);
        g_error_free(err);
    }
    return ok;
}

static NetHardware override_ok(const char *base, const char *yaml)
{
    NetHardware hw;
    g_autofree char *msg = NULL;
    cr_assert(override(base, yaml, &hw, &msg), "unexpected error: %s", msg);
    char why[256];
    cr_assert(net_hardware_check(&hw, why, sizeof why), "%s", why);
    return hw;
}

static void override_fails(const char *base, const char *yaml, const char *want)
{
    NetHardware hw;
    g_autofree char *msg = NULL;
    cr_assert_not(override(base, yaml, &hw, &msg), "expected an error for %s", yaml);
    cr_assert(g_str_has_prefix(msg, "o.yaml:"), "%s", msg);
    assert_has(msg, want);
}

Test(overrides, top_level_fields)
{
    NetHardware b200 = preset("b200");
    NetHardware hw = override_ok("b200", "preset: b200\nhbm_gib: 178\n");
    /* a datasheet capacity without a visible one replaces both: the capacity is the one given */
    cr_assert_eq(hw.hbm_bytes, 178 * GIB);
    cr_assert_eq(hw.hbm_datasheet_bytes, 178 * GIB);
    cr_assert_eq(hw.hbm_visible_bytes, 0);
    cr_assert_str_eq(hw.name, "b200");
    /* nothing else moved */
    hw.hbm_bytes = b200.hbm_bytes;
    hw.hbm_datasheet_bytes = b200.hbm_datasheet_bytes;
    hw.hbm_visible_bytes = b200.hbm_visible_bytes;
    cr_assert(memcmp(&hw, &b200, sizeof hw) == 0);

    /* a visible capacity keeps the datasheet's */
    hw = override_ok("b200", "hbm_visible_gib: 170\n");
    cr_assert_eq(hw.hbm_bytes, 170 * GIB);
    cr_assert_eq(hw.hbm_datasheet_bytes, b200.hbm_datasheet_bytes);
    hw = override_ok("b200", "hbm_gb: 192\nhbm_visible_bytes: 1000\n");
    cr_assert_eq(hw.hbm_bytes, 1000);
    cr_assert_eq(hw.hbm_datasheet_bytes, UINT64_C(192000000000));

    hw = override_ok("h100", "name: h100-slow\nlaunch_latency_us: 20\nhbm_bandwidth_tib_s: 3\n"
                             "compute_tflops: {fp4: 4000}\n"
                             "native_dtypes: [bf16, fp16, fp8, int8, fp4]\n");
    cr_assert_str_eq(hw.name, "h100-slow");
    cr_assert_eq(hw.launch_latency_ns, 20000);
    cr_assert_eq(hw.hbm_bw_bytes_per_s, 3 * TIB);
    cr_assert_eq(hw.peak_flops[NET_PEAK_FP4], 4000e12);
    cr_assert_eq(hw.peak_flops[NET_PEAK_BF16], 989e12); /* other dtypes kept */
    cr_assert(hw.native_dtypes & NET_DTYPE_BIT(NET_PEAK_FP4));
    cr_assert_eq(hw.arch, NET_ARCH_SM90); /* kept */
}

Test(overrides, platform_and_arch)
{
    /* a new arch brings its platform and its native dtypes */
    NetHardware hw = override_ok("h100", "arch: sm100\n");
    cr_assert_eq(hw.arch, NET_ARCH_SM100);
    cr_assert_eq(hw.platform, NET_PLATFORM_CUDA);
    cr_assert(hw.native_dtypes & NET_DTYPE_BIT(NET_PEAK_FP4));
    hw = override_ok("h100", "arch: gfx942\n");
    cr_assert_eq(hw.platform, NET_PLATFORM_ROCM);
    hw = override_ok("h100", "platform: rocm\narch: gfx942\n");
    cr_assert_eq(hw.arch, NET_ARCH_GFX942);
    hw = override_ok("mi300x", "platform: rocm\n"); /* the same platform: arch kept */
    cr_assert_eq(hw.arch, NET_ARCH_GFX942);
    hw = override_ok("h100", "platform: xpu\narch: unknown\n");
    cr_assert_eq(hw.platform, NET_PLATFORM_XPU);
    cr_assert_eq(hw.arch, NET_ARCH_UNKNOWN);
    cr_assert(hw.native_dtypes & NET_DTYPE_BIT(NET_PEAK_FP8)); /* h100's peaks */

    override_fails("h100", "platform: rocm\n",
                   "o.yaml:1: key 'platform': platform rocm does not fit arch 'sm90' of hardware "
                   "'h100' (a cuda arch); give arch: too (valid for rocm: unknown, gfx90a, gfx942, "
                   "gfx950)");
    override_fails("h100", "arch: sm80\n",
                   "o.yaml:1: key 'arch': compute_tflops gives fp8 a peak of 1979 TFLOPS, but fp8 "
                   "is not a native dtype of arch sm80");
    override_fails(
        "h100", "compute_tflops: {fp4: 4000}\n",
        "o.yaml:1: key 'fp4': compute_tflops gives fp4 a peak of 4000 TFLOPS, but fp4 is "
        "not a native dtype of arch sm90 (native: bf16, fp16, fp8, int8)");
    override_fails("h100", "arch: sm99\n", "key 'arch': unknown value 'sm99'; did you mean");
    override_fails("h100", "native_dtypes: [bf16]\n",
                   "key 'native_dtypes': compute_tflops gives fp16 a peak of 989 TFLOPS");
}

Test(overrides, tiers_by_name)
{
    NetHardware hw = override_ok("h100", "tiers:\n  ib: {bandwidth_gb_s: 25, "
                                         "shared_bandwidth_gb_s: 100}\n"
                                         "  nvlink: {latency_us: 1}\n");
    cr_assert_eq(hw.tiers[1].bw_bytes_per_s, 25e9);
    cr_assert_eq(hw.tiers[1].shared_bw_bytes_per_s, 100e9);
    cr_assert_eq(hw.tiers[1].latency_ns, 2700);
    cr_assert_eq(hw.tiers[0].latency_ns, 1000);
    cr_assert_eq(hw.tiers[0].bw_bytes_per_s, 450e9);

    /* a tier whose span is the node follows devices_per_node */
    hw = override_ok("h100", "devices_per_node: 4\n");
    cr_assert_eq(hw.devices_per_node, 4);
    cr_assert_eq(hw.tiers[0].span_devices, 4);
    hw = override_ok("ascend-910c", "devices_per_node: 8\n");
    cr_assert_eq(hw.tiers[0].span_devices, 2);   /* d2d stays */
    cr_assert_eq(hw.tiers[1].span_devices, 8);   /* ub follows */
    cr_assert_eq(hw.tiers[2].span_devices, 768); /* ub2 stays */
    /* unless its span is set too */
    hw = override_ok("h100", "devices_per_node: 4\ntiers: {nvlink: {span: 8}}\n");
    cr_assert_eq(hw.tiers[0].span_devices, 8);
    hw = override_ok("h100", "devices_per_node: 4\ntiers: {nvlink: {span: node}}\n");
    cr_assert_eq(hw.tiers[0].span_devices, 4);
}

Test(overrides, tiers_as_a_list_replace_all)
{
    NetHardware hw = override_ok("h100", "tiers:\n"
                                         "  - {name: pcie, span: 2, bandwidth_gb_s: 32, "
                                         "latency_us: 1}\n"
                                         "  - {name: nvl, span: node, bandwidth_gb_s: 450, "
                                         "latency_us: 0.6}\n"
                                         "  - {name: eth, span: cluster, bandwidth_gb_s: 25, "
                                         "latency_us: 5}\n");
    cr_assert_eq(hw.n_tiers, 3);
    cr_assert_str_eq(hw.tiers[0].name, "pcie");
    cr_assert_eq(hw.tiers[1].span_devices, 8);
    cr_assert_eq(net_hardware_tier(&hw, "ib"), -1);
}

Test(overrides, errors)
{
    override_fails("h100", "tiers: {ibx: {bandwidth_gb_s: 25}}\n",
                   "o.yaml:1: key 'ibx': no tier named 'ibx' in hardware 'h100'; did you mean "
                   "'ib'? (valid: nvlink, ib)");
    override_fails("h100", "tiers:\n  ib: {bandwidth_gb_s: -1}\n",
                   "o.yaml:2: key 'bandwidth_gb_s': -1 is out of range");
    override_fails("h100", "tiers: {ib: {name: eth}}\n",
                   "key 'name': not valid for the override of tier 'ib'");
    override_fails("h100", "tiers: {ib: {bandwith_gb_s: 1}}\n", "did you mean 'bandwidth_gb_s'?");
    override_fails("h100", "tiers: {ib: 5}\n", "key 'ib': expected a mapping");
    override_fails("h100", "hbm_gb: 1\nhbm_gib: 1\n", "HBM capacity is given twice");
    override_fails("h100", "hbm_visible_gib: 1\nhbm_visible_bytes: 1\n",
                   "the visible HBM capacity is given twice");
    override_fails("h100", "hbm_gib: -1\n", "key 'hbm_gib': -1 is out of range");
    override_fails("h100", "hbm_gbb: 1\n",
                   "key 'hbm_gbb': unknown key in hardware; did you mean 'hbm_gb'?");
    override_fails("h100", "description: x\n", "key 'description': not valid for hardware");
    override_fails("h100", "tiers: 5\n", "expected a list or a mapping");
    /* a structure broken by an override: the line of that tier's override */
    override_fails("ascend-910c", "tiers:\n  ub: {span: 3}\n",
                   "o.yaml:2: key 'ub': the hardware after these overrides is inconsistent: "
                   "tier 'ub'");
    override_fails("h100", "tiers: {ib: {span: 16}}\n", "o.yaml:1: key 'ib': ");
    /* ... or of devices_per_node when that moved a tier */
    override_fails("ascend-910c", "devices_per_node: 3\n",
                   "o.yaml:1: key 'hardware': the hardware after these overrides is "
                   "inconsistent: tier 'd2d'");
}
