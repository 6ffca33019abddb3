#!/usr/bin/env python3
"""Chat templates (data/loaders/chat_template.c) against Jinja2 itself (Debian's python3-jinja2),
configured as transformers' apply_chat_template configures it: ImmutableSandboxedEnvironment with
trim_blocks and lstrip_blocks, raise_exception() as a global, messages / add_generation_prompt /
bos_token / eos_token as variables.

Cases: the chat templates of 22 published models (their tokenizer_config.json "chat_template", as
llama.cpp's tests/test-chat-template.cpp and the model cards list them; Llama 3.x and Qwen2.5 / Qwen3 as
files in tests/chat/templates/, see its README.md) plus templates written here
to exercise each construct of the subset and Jinja's whitespace rules, each rendered for several
conversations (with and without a system message, one turn, Spec-Bench's two turns, broken role
order that some templates reject, content with quotes, braces, backslashes, newlines, UTF-8), with
and without the generation prompt. The C renderer must give the same text byte for byte, and fail
exactly where Jinja raises. Templates outside the subset must give a one-line error naming the
line, never output. Also: a model directory's chat_template.jinja / tokenizer_config.json are read
(string form, the list form's "default", AddedToken-style bos_token), and a bad one is named.
Deterministic; no false-failure rate.
"""
import argparse
import json
import os
import subprocess
import sys

from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

# Published templates (tokenizer_config.json "chat_template" values).
PUBLISHED = {
    "OpenHermes-2.5 (ChatML)": r"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
    "Mistral-7B-Instruct-v0.2": r"{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}",
    "FusionNet_34Bx2_MoE": "{%- for idx in range(0, messages|length) -%}\n{%- if messages[idx]['role'] == 'user' -%}\n{%- if idx > 1 -%}\n{{- bos_token + '[INST] ' + messages[idx]['content'] + ' [/INST]' -}}\n{%- else -%}\n{{- messages[idx]['content'] + ' [/INST]' -}}\n{%- endif -%}\n{% elif messages[idx]['role'] == 'system' %}\n{{- '[INST] <<SYS>>\\n' + messages[idx]['content'] + '\\n<</SYS>>\\n\\n' -}}\n{%- elif messages[idx]['role'] == 'assistant' -%}\n{{- ' '  + messages[idx]['content'] + ' ' + eos_token -}}\n{% endif %}\n{% endfor %}",
    "Llama-2-chat": r"{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
    "vigogne-2-70b-chat": r"{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% elif true == true and not '<<SYS>>' in messages[0]['content'] %}{% set loop_messages = messages %}{% set system_message = 'Vous êtes Vigogne, un assistant IA créé par Zaion Lab. Vous suivez extrêmement bien les instructions. Aidez autant que vous le pouvez.' %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'system' %}{{ '<<SYS>>\n' + content.strip() + '\n<</SYS>>\n\n' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
    "AlphaMonarch-7B": r"{% for message in messages %}{{bos_token + message['role'] + '\n' + message['content'] + eos_token + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ bos_token + 'assistant\n' }}{% endif %}",
    "gemma-7b-it": r"{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}",
    "Orion-14B-Chat": r"{% for message in messages %}{% if loop.first %}{{ bos_token }}{% endif %}{% if message['role'] == 'user' %}{{ 'Human: ' + message['content'] + '\n\nAssistant: ' + eos_token }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}{% endif %}{% endfor %}",
    "openchat-3.5-0106": r"{{ bos_token }}{% for message in messages %}{{ 'GPT4 Correct ' + message['role'].title() + ': ' + message['content'] + '<|end_of_turn|>'}}{% endfor %}{% if add_generation_prompt %}{{ 'GPT4 Correct Assistant:' }}{% endif %}",
    "deepseek-coder-33b-instruct": "{% if not add_generation_prompt is defined %}\n{% set add_generation_prompt = false %}\n{% endif %}\n{%- set ns = namespace(found=false) -%}\n{%- for message in messages -%}\n    {%- if message['role'] == 'system' -%}\n        {%- set ns.found = true -%}\n    {%- endif -%}\n{%- endfor -%}\n{{bos_token}}{%- if not ns.found -%}\n{{'You are an AI programming assistant, utilizing the Deepseek Coder model, developed by Deepseek Company, and you only answer questions related to computer science. For politically sensitive questions, security and privacy issues, and other non-computer science questions, you will refuse to answer\\n'}}\n{%- endif %}\n{%- for message in messages %}\n    {%- if message['role'] == 'system' %}\n{{ message['content'] }}\n    {%- else %}\n        {%- if message['role'] == 'user' %}\n{{'### Instruction:\\n' + message['content'] + '\\n'}}\n        {%- else %}\n{{'### Response:\\n' + message['content'] + '\\n<|EOT|>\\n'}}\n        {%- endif %}\n    {%- endif %}\n{%- endfor %}\n{% if add_generation_prompt %}\n{{'### Response:'}}\n{% endif %}",
    "vicuna-13b-1.1 (as llama.cpp sets it)": "{%- for message in messages %}{%- if message['role'] == 'system' -%}{{- '' + message['content'] + '\n\n' -}}{%- else -%}{%- if message['role'] == 'user' -%}{{-'USER: ' + message['content'] + '\n'-}}{%- else -%}{{-'ASSISTANT: ' + message['content'] + '</s>\n' -}}{%- endif -%}{%- endif -%}{%- endfor -%}{%- if add_generation_prompt -%}{{-'ASSISTANT:'-}}{%- endif -%}",
    "c4ai-command-r-plus": r"{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% elif false == true %}{% set loop_messages = messages %}{% set system_message = 'You are Command-R, a brilliant, sophisticated, AI-assistant trained to assist human users by providing thorough responses. You are trained by Cohere.' %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% if system_message != false %}{{ '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' + system_message + '<|END_OF_TURN_TOKEN|>' }}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% set content = message['content'] %}{% if message['role'] == 'user' %}{{ '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + content.strip() + '<|END_OF_TURN_TOKEN|>' }}{% elif message['role'] == 'assistant' %}{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>'  + content.strip() + '<|END_OF_TURN_TOKEN|>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{% endif %}",
    "Llama-3-Instruct": "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}",
    "Phi-3-mini": "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') %}{{'<|user|>' + '\n' + message['content'] + '<|end|>' + '\n' + '<|assistant|>' + '\n'}}{% elif (message['role'] == 'assistant') %}{{message['content'] + '<|end|>' + '\n'}}{% endif %}{% endfor %}",
    "zephyr-7b-beta": "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}",
    "Qwen2-Instruct": "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
    "Mistral-7B-Instruct-v0.1": "{{ bos_token }}{% for message in messages %}\n    {% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}\n        {{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}\n    {% endif %}\n    {% if message['role'] == 'user' %}\n        {{ '[INST] ' + message['content'] + ' [/INST]' }}\n    {% elif message['role'] == 'assistant' %}\n        {{ message['content'] + eos_token + ' ' }}\n    {% else %}\n        {{ raise_exception('Only user and assistant roles are supported!') }}\n    {% endif %}\n{% endfor %}",
}

# Published templates kept as files (tests/chat/templates/README.md says where each comes from): Llama 3.x
# and Qwen2.5 / Qwen3, with tool calls, reasoning content, namespace, slices with a step, pair loops.
TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
for _fn in sorted(os.listdir(TEMPLATE_DIR)):
    if _fn.endswith(".jinja"):
        with open(os.path.join(TEMPLATE_DIR, _fn), encoding="utf-8") as _f:
            PUBLISHED[_fn[:-len(".jinja")]] = _f.read()

# Written here: every construct of the subset, and the whitespace rules.
CONSTRUCTS = {
    # string escapes as Jinja decodes them (Python's unicode-escape; issue 27 class 4: they were output
    # literally): \u, \x, octal, \U, \t, an unknown escape kept
    "string escapes": r"{{ 'caf\u00e9 \x41\101 \U0001F600 a\tb \q \'' }}",
    "filters, tests, operators": "{% for m in messages %}{{ loop.index }}/{{ loop.length }} {{ m.role | upper }} "
    "{{ m['content'] | length }} {{ 'even' if loop.index0 is even else 'odd' }} {{ m.content[:3] ~ '|' ~ m.content[-2:] }}"
    "{{ ' last' if loop.last }}{{ ' first' if loop.first else '' }} {{ loop.revindex }}:{{ loop.revindex0 }}\n{% endfor %}"
    "{{ (messages | length) * 2 + 1 - 3 // 2 % 5 }} {{ 7 % 3 }} {{ -7 // 2 }} {{ 'x' * 3 }} {{ ([1, 2] + [3]) | length }}"
    " {{ 'ab' in 'cabd' }} {{ 'z' not in 'abc' }} {{ 2 in [1, 2] }} {{ not true or false and true }}"
    " {{ none is none }} {{ 1 is not string }} {{ undefined_name is undefined }} {{ undefined_name | default('dflt') }}"
    " {{ '' | default('x', true) }} {{ [4, 5, 6] | first }} {{ [4, 5, 6] | last }} {{ 'mIxEd cAsE' | title }}"
    " {{ 'hello world' | capitalize }} {{ '  pad  ' | trim }}|{{ 'xxhixx'.strip('x') }}|{{ '  l'.lstrip() }}|"
    "{{ 'r  '.rstrip() }}|{{ 'a,b,c'.split(',') | length }}|{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('bc') }}"
    " {{ 'A'.lower() }}{{ 'b'.upper() }} {{ 3 > 2 }} {{ 2 >= 3 }} {{ 'a' < 'b' }} {{ 1 == 2 if false else 1 != 2 }}",
    "namespace and scoping": "{% set ns = namespace(n=0, seen='') %}{% set outer = 'o' %}{% for m in messages %}"
    "{% set outer = 'inner' %}{% set ns.n = ns.n + 1 %}{% set ns.seen = ns.seen + m.role[0] %}{% endfor %}"
    "{{ ns.n }} {{ ns.seen }} {{ outer }}{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(1, 7, 2) %}"
    "{{ i }}{% endfor %}{% for i in range(3, 0, -1) %}{{ i }}{% endfor %}{% for x in [] %}never{% endfor %}"
    "{% if messages | length > 2 %} long{% elif messages | length > 1 %} two{% else %} one{% endif %}",
    "whitespace control": "A  \n  {% if true %}\n    B {{- ' c ' -}}  D\n  {%- if true +%}  E\n  {%+ endif %}{% endif %}\n"
    "{# a comment #}\n  {#- another -#}  F\n{% for m in messages %}\n    [{{ m.role }}]\n{% endfor %}\nG{{ '\\n' }}H\n"
    "{% raw_not_used = 1 if false %}",
    "slices with a step, pair loops, items": "{{ messages[::-1] | length }}{% for m in messages[::-1] %}{{ m.role[0] }}"
    "{% endfor %}|{{ 'abcdef'[::2] }}|{{ 'abcdef'[-1:1:-2] }}|{{ 'héllo wörld'[::-1] }}|{{ 'abc'[5:0:-1] }}|"
    "{{ 'abc'[-9::] }}|{% for x in [1, 2, 3, 4, 5][4:0:-2] %}{{ x }}{% endfor %}|{% for x in [1, 2, 3][::-5] %}{{ x }}"
    "{% endfor %}|{% for k, v in messages[0] | items %}{{ k }}={{ v | length }};{% endfor %}"
    "{% for a, b in [[1, 2], ['x', 'y']] %}{{ a }}{{ b }}{% endfor %}",
    "lstrip and trim with CRLF and tabs": "\t{% if add_generation_prompt %}\r\nyes\r\n\t\t{% else %}\r\nno\r\n{% endif %}"
    "\n   {{ bos_token }}  \n{% for m in messages %}{{ m.content }}{% if not loop.last %}, {% endif %}{% endfor %}",
}
# the last line of "whitespace control" is deliberately outside the subset: remove it for the
# comparison, keep it for the error case
CONSTRUCTS["whitespace control"] = CONSTRUCTS["whitespace control"].rsplit("{% raw_not_used", 1)[0]

OUTSIDE = {  # Jinja accepts these; the subset must refuse them, naming the line
    "a named escape": r"{{ '\N{BULLET}' }}",
    # chains of 15,000 links overflowed the C stack (exit 139, issue 27 class 4): refused in one line
    "a 15,000-term sum": "{{ " + " + ".join(["1"] * 15000) + " }}",
    "a 15,000-filter chain": "{{ 'x'" + " | trim" * 15000 + " }}",
    "a macro": "ok\n{% macro f() %}x{% endmacro %}",
    "tojson": "{{ messages | tojson }}",
    "unpacking three loop variables": "{% for a, b, c in [[1, 2, 3]] %}{{ a }}{% endfor %}",
    "a zero slice step": "{{ 'abc'[::0] }}",
    "a float": "\n\n{{ 1.5 }}",
    "block set": "{% set x %}y{% endset %}",
    "loop filter": "{% for m in messages if m.role %}{% endfor %}",
}

CONVERSATIONS = [
    ([("system", "You are a helpful assistant"), ("user", "Hello"), ("assistant", "Hi there"),
      ("user", "Who are you"), ("assistant", "   I am an assistant   "), ("user", "Another question")], True),
    ([("user", "What is 2 + 3?")], True),
    ([("user", "What is 2 + 3?")], False),
    ([("user", "Write a short note about tea."), ("assistant", "Tea is a drink."), ("user", "Now make it rhyme.")], True),
    ([("system", "Be brief."), ("user", "Hi")], True),
    ([("user", "one"), ("user", "two")], True),  # breaks the alternation some templates enforce
    ([("user", "quotes ' \" braces {{ x }} {% if %} backslash \\ newline\nand UTF-8: é ✓ 日本"),
      ("assistant", "  spaced answer\n\n"), ("user", "<s> and </s> as text")], True),
    ([("assistant", "starts with the assistant")], False),
    # reasoning in the content, as Qwen3's template splits it ("<think>...</think>")
    ([("system", "Think first."), ("user", "2 + 2?"), ("assistant", "<think>\nadd them\n</think>\n\n4"),
      ("user", "and 3 + 3?")], True),
    ([("user", "<tool_response>\nresult\n</tool_response>"), ("assistant", "  <think>x</think>  y  ")], True),
]


def jinja_render(template, messages, add_generation_prompt):
    def raise_exception(message):
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    try:
        return True, env.from_string(template).render(
            messages=[{"role": r, "content": c} for r, c in messages], add_generation_prompt=add_generation_prompt,
            bos_token="<s>", eos_token="</s>")
    except Exception as e:  # noqa: BLE001 (any Jinja failure: the C side must fail too)
        return False, "%s: %s" % (type(e).__name__, e)


def run_driver(driver, work, cases):
    path = os.path.join(work, "cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False)
    p = subprocess.run([driver, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit("chat_driver failed: %s" % p.stderr.decode(errors="replace"))
    return [json.loads(line) for line in p.stdout.decode("utf-8").splitlines()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--driver", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL: " + what, flush=True)

    cases, expect = [], []
    for name, tmpl in list(PUBLISHED.items()) + list(CONSTRUCTS.items()):
        for messages, gen in CONVERSATIONS:
            ok, text = jinja_render(tmpl, messages, gen)
            cases.append({"template": tmpl, "messages": [{"role": r, "content": c} for r, c in messages],
                          "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": gen})
            expect.append((name, ok, text))
    got = run_driver(a.driver, a.work, cases)
    n_raise = 0
    for (name, ok, text), g, cs in zip(expect, got, cases):
        roles = "/".join(m["role"][0] for m in cs["messages"]) + ("+gen" if cs["add_generation_prompt"] else "")
        if ok:
            check(g["ok"] and g["text"] == text, "%s [%s]: Jinja %r, C %r" % (name, roles, text, g.get("text", g.get("error"))))
        else:
            n_raise += 1
            check(not g["ok"] and g["error"].startswith("chat_template raised: "),
                  "%s [%s]: Jinja raises (%s), C %r" % (name, roles, text, g))
    print("published and construct templates: %d cases, %d of them raise in Jinja" % (len(cases), n_raise), flush=True)

    bad = [{"template": t, "messages": [{"role": "user", "content": "x"}], "add_generation_prompt": True}
           for t in OUTSIDE.values()]
    for (name, tmpl), g in zip(OUTSIDE.items(), run_driver(a.driver, a.work, bad)):
        line = tmpl[:tmpl.find("{") + 1].count("\n") + 1
        check(not g["ok"] and g["error"].startswith("chat_template: line %d: " % line),
              "outside the subset (%s): a one-line error naming line %d, got %r" % (name, line, g))

    # a model directory's template files
    d = os.path.join(a.work, "model")
    os.makedirs(d, exist_ok=True)

    def load(config, jinja=None):
        for fn in ("chat_template.jinja", "tokenizer_config.json"):
            if os.path.exists(os.path.join(d, fn)):
                os.remove(os.path.join(d, fn))
        if config is not None:
            with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
                f.write(config if isinstance(config, str) else json.dumps(config))
        if jinja is not None:
            with open(os.path.join(d, "chat_template.jinja"), "w") as f:
                f.write(jinja)
        p = subprocess.run([a.driver, "--load", d], stdout=subprocess.PIPE, text=True)
        return json.loads(p.stdout)

    llama2 = PUBLISHED["Llama-2-chat"]
    g = load({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": llama2}],
              "bos_token": {"content": "<s>", "lstrip": False}, "eos_token": "</s>", "pad_token": None})
    check(g.get("template") == llama2 and g.get("bos_token") == "<s>" and g.get("eos_token") == "</s>" and
          "pad_token" not in g and g.get("source") == "tokenizer_config.json",
          "tokenizer_config.json: the list form's default template, AddedToken bos_token: %s" % g)
    g = load({"chat_template": "from config", "eos_token": "</s>"}, jinja="from the jinja file")
    check(g.get("template") == "from the jinja file" and g.get("eos_token") == "</s>",
          "chat_template.jinja wins over tokenizer_config.json: %s" % g)
    g = load({"eos_token": "</s>"})
    check(g.get("ok") and "template" not in g, "no chat_template: none loaded, no error: %s" % g)
    for cfg, field in (({"chat_template": 5}, "chat_template"), ({"chat_template": [{"name": "x", "template": "T"}]},
                       "chat_template"), ({"chat_template": "T", "bos_token": 1}, "bos_token"), ("{not json", None)):
        g = load(cfg)
        want = "tokenizer_config.json" + ((": field \"%s\"" % field) if field else "")
        check(not g["ok"] and want in g["error"] and "\n" not in g["error"],
              "bad tokenizer_config.json %r: one line naming the file%s: %r" % (cfg, " and field" if field else "", g))
    # a NUL in a template or a special token would cut the text (issue 27, class 4): refused, one line
    for cfg, where in (({"chat_template": "A\x00B"}, "chat_template"), ({"chat_template": "T", "bos_token": "<s>\x00x"},
                       "bos_token"), ({"chat_template": "T", "eos_token": {"content": "</s>\x00"}}, "eos_token")):
        g = load(cfg)
        check(not g["ok"] and "tokenizer_config.json" in g["error"] and "u0000" in g["error"] and
              "\n" not in g["error"], "NUL in %s of tokenizer_config.json: refused in one line: %r" % (where, g))
    g = load({"chat_template": "A\\u0000B"})
    check(g.get("ok") and g.get("template") == "A\\u0000B",
          "an escaped backslash before u0000 is text, kept as it is: %r" % g)
    g = load({"eos_token": "</s>"}, jinja="{{ bos_token }}\x00{{ messages }}")
    check(not g["ok"] and "chat_template.jinja" in g["error"] and "NUL" in g["error"] and "\n" not in g["error"],
          "NUL byte in chat_template.jinja: refused in one line naming the file: %r" % g)
    # malformed JSON is named as such, with its position; valid JSON that is no object as that (issue 27, class 10)
    for cfg, want in (('{"chat_template": "T",, }', "tokenizer_config.json: malformed JSON at line 1"),
                      ('{"a": 1,\n "b": }', "tokenizer_config.json: malformed JSON at line 2"),
                      ('["chat_template"]', "tokenizer_config.json: valid JSON, but not an object")):
        g = load(cfg)
        check(not g["ok"] and want in g["error"] and "\n" not in g["error"],
              "tokenizer_config.json %r: one line %r: %r" % (cfg, want, g))
    print("chat_template: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
