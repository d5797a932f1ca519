// Renders the conversations of render_cases.json with the chat templates of
// render_templates.json through @huggingface/jinja, the JavaScript Jinja of Hugging Face's
// libraries, and writes render_goldens.json. To produce it again, from this folder:
//   npm install --prefix /tmp/jinja @huggingface/jinja@0.5.11
//   NODE_PATH=/tmp/jinja/node_modules node render_goldens.mjs
//
// Each case is rendered with each of its templates, with its tools and, when it has tools,
// also without any. A golden holds "steps": the conversation rendered with the generation
// prompt after the opening messages and after every environment reply, and "full": the whole
// conversation up to its last assistant turn, without the generation prompt.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { Template } = require("@huggingface/jinja");
const main = require.resolve("@huggingface/jinja");
const version = JSON.parse(readFileSync(join(dirname(main), "..", "package.json"), "utf8")).version;

const templates = JSON.parse(readFileSync("render_templates.json", "utf8"));
const { cases } = JSON.parse(readFileSync("render_cases.json", "utf8"));

// render applies a template as transformers' apply_chat_template does: tools only when
// offered (Llama 3.1 tells an absent list from an empty one), and a fixed date for Llama 3.2,
// which otherwise dates its system turn today.
function render(name, messages, tools, generationPrompt) {
	const llama = name.startsWith("llama");
	const context = {
		messages,
		add_generation_prompt: generationPrompt,
		bos_token: llama ? "<|begin_of_text|>" : null,
		eos_token: llama ? "<|eot_id|>" : "<|im_end|>",
	};
	if (tools !== undefined) context.tools = tools;
	if (name === "llama3.2") context.date_string = "15 Mar 2025";
	return new Template(templates[name]).render(context);
}

const goldens = [];
for (const c of cases) {
	const variants = c.tools === undefined ? [undefined] : [c.tools, undefined];
	for (const name of c.templates) {
		for (const tools of variants) {
			const messages = c.opening.map((m) => ({ role: m.role, content: m.content }));
			const steps = [render(name, messages, tools, true)];
			for (const turn of c.turns) {
				messages.push({ role: "assistant", content: turn.text });
				if (turn.reply === undefined) continue;
				for (const m of turn.reply) messages.push({ role: m.role, content: m.content });
				steps.push(render(name, messages, tools, true));
			}
			const last = messages.findLastIndex((m) => m.role === "assistant");
			const full = render(name, messages.slice(0, last + 1), tools, false);
			goldens.push({ case: c.name, template: name, tools: tools !== undefined, steps, full });
		}
	}
}
writeFileSync("render_goldens.json", JSON.stringify({ renderer: `@huggingface/jinja ${version}`, goldens }, null, 1) + "\n");
