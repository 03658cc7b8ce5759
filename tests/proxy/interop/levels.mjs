// For every model of pi-ai 1.6.0's catalogue: the thinking levels it takes, and the level each
// of "minimal", "xhigh" and "max" asks it for. Prints one JSON object keyed "provider/id".
import { pi } from "./pi.mjs";

const { ai } = await pi("1.6.0");
const levels = {};
for (const provider of ai.getProviders()) {
  for (const model of ai.getModels(provider)) {
    const clamped = ["minimal", "xhigh", "max"].map((level) => ai.clampThinkingLevel(model, level));
    levels[`${provider}/${model.id}`] = [ai.getSupportedThinkingLevels(model), ...clamped];
  }
}
console.log(JSON.stringify(levels));
