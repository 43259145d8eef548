#pragma once
// Folding the inputs with a default that the model's config does not
// declare: the first model pass (Note [Model passes] in
// runtime/passes/model_passes.h).

#include <set>
#include <string>

#include "runtime/ir.h"

namespace graphserve {

// Each input with a default (Note [Inputs with defaults] in runtime/ir.h)
// that `declared` does not name leaves Model::inputs and becomes the
// initializer of its name, its default: a weight like any other for the
// passes after this one and for binding. Those `declared` names stay inputs.
void FoldInputDefaults(Model& model, const std::set<std::string>& declared);

}  // namespace graphserve
