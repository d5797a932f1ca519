// Renders every case of cases.json with every template of templates.json through
// @huggingface/jinja and writes goldens.json. Run from this folder:
//   npm install --prefix /tmp/jinja @huggingface/jinja@0.5.11
//   NODE_PATH=/tmp/jinja/node_modules node render.mjs
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { Template } = require("@huggingface/jinja");
const main = require.resolve("@huggingface/jinja");
const version = JSON.parse(readFileSync(join(dirname(main), "..", "package.json"), "utf8")).version;

const templates = JSON.parse(readFileSync("templates.json", "utf8"));
const cases = JSON.parse(readFileSync("cases.json", "utf8"));

// Templates without tools render tool specs and calls by dropping them, so only the cases
// without either are theirs.
const toolless = new Set(["llama3", "qwen2"]);
const usesTools = (c) => c.tools !== undefined || c.messages.some((m) => m.tool_calls !== undefined);

const goldens = [];
for (const [name, text] of Object.entries(templates)) {
	const template = new Template(text);
	for (const c of cases) {
		if (toolless.has(name) && usesTools(c)) continue;
		const context = {
			messages: c.messages,
			add_generation_prompt: c.add_generation_prompt,
			bos_token: name.startsWith("llama") ? "<|begin_of_text|>" : null,
			eos_token: name.startsWith("llama") ? "<|eot_id|>" : "<|im_end|>",
		};
		for (const key of ["tools", "date_string", "tools_in_user_message"]) {
			if (c[key] !== undefined) context[key] = c[key];
		}
		// Llama 3.2 dates the system turn today unless given a date: a fixed one keeps the
		// goldens still (the Go test gives the same).
		if (name === "llama3.2" && context.date_string === undefined) context.date_string = "15 Mar 2025";
		try {
			goldens.push({ template: name, case: c.name, text: template.render(context) });
		} catch (e) {
			goldens.push({ template: name, case: c.name, error: String(e.message) });
		}
	}
}
writeFileSync("goldens.json", JSON.stringify({ renderer: `@huggingface/jinja ${version}`, goldens }, null, 1) + "\n");
