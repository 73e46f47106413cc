"""Every prompt seekgraph sends to a chat model, as named constants with XML-tagged sections."""

EXPAND_QUERY_PROMPT = """<role>You write search queries for an enterprise search engine.</role>
<question>{question}</question>
<conversation>{conversation}</conversation>
<already_tried>{tried}</already_tried>
<gaps>{gaps}</gaps>
<task>Write up to {max_variants} complete natural-language search queries that together find
everything needed to answer the question. Put queries for the gaps first. Do not repeat a
query that was already tried. Resolve pronouns using the conversation.</task>"""

GRADE_PROMPT = """<role>You judge whether passages help answer a question.</role>
<question>{question}</question>
<passages>
{passages}
</passages>
<task>For every passage id, give a relevance score between 0 and 1: 1 means it directly
answers part of the question, 0 means it is unrelated.</task>"""

EVALUATE_PROMPT = """<role>You decide whether the evidence is enough to answer a question.</role>
<question>{question}</question>
<needs>
{needs}
</needs>
<evidence>
{evidence}
</evidence>
<documents_already_read>{read}</documents_already_read>
<task>Judge relevance, completeness and freshness. The question may use other words than the
evidence: a need is answered when a passage states what it asks (of its type: an amount, a
date, a person…), whatever its words. Choose one action:
"answer" when the evidence answers every need; "read" with the doc ids of at most
{max_read} documents whose full text would likely hold the rest; "search" with gap questions
for what is missing. Say briefly why.</task>"""

INTEGRATE_PROMPT = """<role>You answer questions from company sources, citing every claim.</role>
<today>{today}</today>
<question>{question}</question>
<needs>
{needs}
</needs>
<conversation>{conversation}</conversation>
<sources>
{sources}
</sources>
<notes>{notes}</notes>
<rules>
- Use only the sources. After every claim write its citation as [src:ID] with the source id.
- Answer every need. The sources may say it in other words than the question: say that
  something is not in the sources only when no source states it.
- Sources are listed by authority: knowledge base, then documents, then messages and notes.
  Prefer the most authoritative, newest, non-deprecated source.
- A deprecated source was replaced by a newer version: use the newer one and say so.
- A newer source that announces a change ("from 1 November", "moved to", "switched off on")
  effective on or before today supersedes an older article: give the current fact first and
  say the article is out of date, citing both. A change effective after today is upcoming.
- When sources disagree, say so, name both, and say which one to trust and why.
- If something the question asks is not in the sources, say it plainly. Never invent a source.
{forced}
</rules>"""

FORCED_NOTE = """- The search budget is spent ({reason}). Answer with what the sources show and list
  what is still missing."""

CHECK_ANSWER_PROMPT = """<role>You check an answer against its sources.</role>
<question>{question}</question>
<answer>{answer}</answer>
<sources>
{sources}
</sources>
<task>Is every claim in the answer supported by the cited source? Is the answer definitive
(it answers the question, or says plainly what is missing)? List unsupported claims.</task>"""

RESEARCH_PLAN_PROMPT = """<role>You plan research: a request becomes sub-questions.</role>
<request>{request}</request>
<topics_found>
{topics}
</topics_found>
<task>Write at most {max_subs} sub-questions that together cover the request, each
answerable by one search of the sources. Give each an id (q1, q2, …), a short title for its
report section, an intent (one sentence: what it must cover and what it must not, so it does
not drift into another sub-question) and the ids it depends on: only when it needs an earlier
answer, which it then names as {{q1}}. The topics found in the sources show what they hold;
use them, but do not invent facts. No cycles.</task>"""

WRITE_SECTION_PROMPT = """<role>You write one section of a research report.</role>
<report_request>{request}</report_request>
<section title="{title}">{question}</section>
<intent>{intent}</intent>
<passages>
{passages}
</passages>
<rules>
- Write at most {max_sentences} sentences, each stating one fact from the passages.
- Give every sentence the id of the one passage that supports it; cite no other ids.
- Keep names, numbers and dates exactly as the passages give them.
- Leave out what the passages do not say.
</rules>"""

COHERENCE_PROMPT = """<role>You edit a research report so it reads as one document.</role>
<report_request>{request}</report_request>
<sections>
{sections}
</sections>
<rules>
- Keep every section id; you may order the sections better and retitle them.
- Remove a fact that an earlier section already gives; use one term for one thing; add short
  transitions inside sentences where they help.
- Every sentence keeps the source id it has; never add a fact or an id.
</rules>"""

RESEARCH_GAPS_PROMPT = """<role>You find what a research report still lacks.</role>
<report_request>{request}</report_request>
<sections>{sections}</sections>
<not_found>
{missing}
</not_found>
<task>Write at most {max_gaps} new sub-questions that would find what the report lacks:
each answerable by one search of the sources, worded differently from what was not found
(other terms, a broader or narrower scope). No sub-question the report already answers.</task>"""

TOKENS_SPENT = (
    "The language model was not used for this answer: this run's token budget is spent "
    "({used} of {most} tokens), so its sentences are quoted from the sources."
)
