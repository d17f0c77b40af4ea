/* src/input/scenario-model.h — `kind: model` (the default): the model, its
 * parallel layout, engine settings and workload, and the program they lower to.
 * Part of the scenario loader (src/input/scenario-common.h lists its layers); every function
 * that returns bool fails by setting ld->doc.error and returning false.
 */
#ifndef SRC_SCENARIO_MODEL_H
#define SRC_SCENARIO_MODEL_H

#include "scenario-common.h"

/* Where errors about one part of a model scenario point: a node (NULL: line 1) and a key. */
typedef struct {
    const YamlDocNode *at;
    const char *key;
} Spot;

/* What the settings start from before the file's `parallel:` and `engine:` apply: vLLM's
 * defaults for a model scenario, the server_args of an eval config. */
typedef struct {
    ModelParallel par;
    ModelEngine engine;
    ModelCostParams cost;
    Spot par_spot;    /* plan errors when the file has no `parallel:` */
    Spot engine_spot; /* lowering errors about the engine when the file has no `engine:` */
    bool eval;        /* an eval config: hardware must be named (no h100 default) */
} ModelSetup;

/* The built-in model presets, NULL-terminated. Caller frees (g_strfreev). */
char **scenario_model_presets(void);
/* Loads the config.json at `path` (a folder means its config.json) into s->arch. */
bool scenario_arch_from_file(Loader *ld, const YamlDocNode *at, const char *key, const char *path,
                             Scenario *s);
/* Loads model preset `name` into s->arch. */
bool scenario_arch_from_preset(Loader *ld, const YamlDocNode *at, const char *key, const char *name,
                               Scenario *s);
/* `model:`: a preset name, or a config.json path relative to the scenario's folder. */
bool scenario_load_arch(Loader *ld, const YamlDocNode *n, Scenario *s);
/* Everything after the architecture, shared by model scenarios and eval configs: the plan,
 * hardware and nodes for its world, engine and cost, workload, lowering, run settings. */
bool scenario_finish_model(Loader *ld, const YamlDocNode *root, Scenario *s, ModelSetup *ms);
bool scenario_interpret_model(Loader *ld, const YamlDocNode *root, Scenario *s);

#endif
