// The TypeScript Pi of one era, by version: "0.73.1" (@mariozechner/*) or "1.6.0"
// (@earendil-works/*), both installed here from package.json and its lock file.
//
// Each era's packages are imported under their own names, and the few places where the two
// differ (where the faux provider and the per-API stream functions live, whether a context is
// normalized into a transcript) are smoothed over here, so that the scripts read the same for
// both.

const SCOPES = { "0.73.1": "@mariozechner", "1.6.0": "@earendil-works" };

/** The agent and ai packages of `version`, plus helpers that hide how the eras differ. */
export async function pi(version) {
  const scope = SCOPES[version];
  if (scope === undefined) {
    console.error(`version must be one of ${Object.keys(SCOPES).join(", ")}, got ${JSON.stringify(version)}`);
    process.exit(2);
  }
  const agent = await import(`${scope}/pi-agent-core`);
  const ai = await import(version === "0.73.1" ? `${scope}/pi-ai` : `${scope}/pi-ai/compat`);
  const current = version === "0.73.1";
  return {
    version,
    agent,
    ai,
    /** A faux provider and a stream function that answers with it, for any model. */
    faux(options = {}) {
      if (current) {
        const registration = ai.registerFauxProvider(options);
        const model = registration.getModel();
        return { registration, model, stream: (_, context, opts) => ai.streamSimple(model, context, opts) };
      }
      const registration = ai.fauxProvider(options);
      const models = ai.createModels();
      models.setProvider(registration.provider);
      const model = registration.getModel();
      return { registration, model, stream: (_, context, opts) => models.streamSimple(model, context, opts) };
    },
    /** The system prompt and tool names a context gives the model, read as this era reads it. */
    understood(context) {
      if (current) {
        return { systemPrompt: context.systemPrompt ?? null, tools: (context.tools ?? []).map((t) => t.name) };
      }
      const { messages } = ai.normalizeContext(context);
      return {
        systemPrompt: ai.getCurrentSystemPrompt(messages),
        tools: ai.getCurrentTools(messages).map((t) => t.name),
      };
    },
    /** `context` as this era's Agent hands it to a stream function. */
    asSent(context) {
      return current ? context : ai.normalizeContext(context);
    },
  };
}
