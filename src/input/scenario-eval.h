/* src/input/scenario-eval.h — vLLM eval configs (tests/evals/gsm8k/configs/
 * NAME.yaml: model_name + server_args + env) read as model scenarios, through the `vllm serve`
 * argument parser (src/input/vllm-args.h).
 * Part of the scenario loader (src/input/scenario-common.h lists its layers); every function
 * that returns bool fails by setting ld->doc.error and returning false.
 */
#ifndef SRC_SCENARIO_EVAL_H
#define SRC_SCENARIO_EVAL_H

#include "scenario-common.h"

/* A file with a top-level `model_name`: read as a model scenario. */
bool scenario_interpret_eval(Loader *ld, const YamlDocNode *root, Scenario *s);

#endif
