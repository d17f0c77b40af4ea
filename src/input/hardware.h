/* src/input/hardware.h — loads hardware descriptions (NetHardware, net/hardware.h) from YAML: the
 * built-in presets, a user's hardware file, and a mapping of overrides taken from a scenario.
 * The format is described key by key in doc/hardware-format.md.
 *
 * Presets are the files net/presets/NAME.yaml, embedded in the binary with GResource (so the
 * binary needs no data files); messages about them still name net/presets/NAME.yaml. An alias
 * loads another preset's file (and keeps that preset's name).
 * Every loaded description has passed net_hardware_check().
 *
 * Errors: SCENARIO_ERROR (src/input/scenario.h), one line "FILE:LINE: key 'KEY': problem; valid ...".
 * SCENARIO_ERROR_IO when a file cannot be read, SCENARIO_ERROR_SYNTAX for malformed YAML,
 * SCENARIO_ERROR_INVALID otherwise. Costs: one small YAML parse per load.
 */
#ifndef SRC_HARDWARE_H
#define SRC_HARDWARE_H

#include <glib.h>
#include <stdbool.h>

#include "../../net/hardware.h"
#include "yamldoc.h"

#define HARDWARE_DEFAULT_PRESET "h100"

/* The preset names, NULL-terminated, in a fixed order (h100 first), aliases included (a100 =
 * a100-80gb). Static storage. */
const char *const *hardware_preset_names(void);
bool hardware_is_preset(const char *name);
/* The preset whose file net/presets/NAME.yaml `name` loads: `name` itself, or the preset an
 * alias stands for ("a100" -> "a100-80gb"); NULL when `name` is no preset. Static storage. */
const char *hardware_preset_file(const char *name);
/* The other names of preset `name` ("h100-sxm, h100-sxm5" for h100), comma-separated, or NULL
 * when it has none. Caller frees. */
char *hardware_preset_aliases(const char *name);

/* Loads preset `name` into *out. Fails (SCENARIO_ERROR_INVALID) for an unknown name, listing
 * the presets. `out` is untouched on failure. */
bool hardware_load_preset(const char *name, NetHardware *out, GError **error);
/* Loads the hardware file at `path` (messages name `path`). */
bool hardware_load_file(const char *path, NetHardware *out, GError **error);
/* Loads hardware YAML already in memory (`len` bytes, or up to the NUL when -1);
 * `display_name` stands in for the path in messages. A missing `name:` defaults to the display
 * name's basename without extension. */
bool hardware_load_string(const char *text, gssize len, const char *display_name, NetHardware *out,
                          GError **error);

/* The top-level keys a mapping of overrides may hold, NULL-terminated. Static storage. */
const char *const *hardware_override_keys(void);

/* Applies the overrides in mapping `map` (a node of another document, e.g. a scenario's
 * `hardware:` value) to *hw, then checks the result. Keys listed in `skip` (NULL-terminated,
 * may be NULL) are ignored (the caller's own keys, such as preset and file); any other key must
 * be one of hardware_override_keys(). Tiers are overridden by name (`tiers: {ib: {...}}`) or
 * replaced as a whole (`tiers: [...]`). A tier whose span equals devices_per_node follows a
 * changed devices_per_node unless its span is overridden too. Errors point into `doc` (`key`
 * names the mapping in messages about it as a whole); `*hw` is unspecified after a failure. */
bool hardware_apply_overrides(YamlDoc *doc, const YamlDocNode *map, const char *key,
                              const char *const *skip, NetHardware *hw);

#endif
