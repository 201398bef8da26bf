"""Built-in content banks the offline backend writes from: names, occupations, persona traits, context
factors with their preferences and checklists, contrastive pairs with their changed preferences,
stories, requests and replies. Data only; the generators are in ``offline.py``.

Checklist questions are all "Does the reply <verb phrase>?" so replies and feedback can reuse the verb
phrase ("I've revised this to <verb phrase>.").
"""

from __future__ import annotations

FIRST_NAMES = (
    "Amara",
    "Tomasz",
    "Lucía",
    "Kenji",
    "Fatima",
    "Oskar",
    "Priya",
    "Mateus",
    "Ingrid",
    "Dmitri",
    "Noor",
    "Camille",
    "Rafael",
    "Aiko",
    "Jonah",
    "Leila",
    "Sven",
    "Thandiwe",
    "Marco",
    "Yusuf",
)
SURNAMES = (
    "Okafor",
    "Nowak",
    "Fernández",
    "Watanabe",
    "Haddad",
    "Lindqvist",
    "Raman",
    "Costa",
    "Berg",
    "Volkov",
    "Rahimi",
    "Dubois",
    "Mendes",
    "Sato",
    "Whitfield",
    "Karimi",
    "Eriksen",
    "Dlamini",
    "Ricci",
    "Demir",
)
PEOPLE = (
    "Grace Mbeki",
    "Henrik Solberg",
    "Rosa Delgado",
    "Arjun Mehta",
    "Chloé Martin",
    "Samuel Osei",
    "Hana Kobayashi",
    "Pieter de Vries",
    "Nadia Petrova",
    "Luis Ortega",
    "Eleanor Price",
    "Tariq Aziz",
)

#: (entry, mid, senior) forms of an occupation.
OCCUPATIONS = (
    ("junior data analyst", "data analyst", "lead data analyst"),
    ("trainee nurse", "staff nurse", "ward manager"),
    ("graduate civil engineer", "civil engineer", "principal civil engineer"),
    ("teaching assistant", "secondary school teacher", "head of department"),
    ("junior copywriter", "copywriter", "creative director"),
    ("apprentice electrician", "electrician", "electrical contractor"),
    ("junior software developer", "software developer", "staff software engineer"),
    ("paralegal", "associate solicitor", "partner at a law firm"),
    ("library assistant", "librarian", "head of library services"),
    ("junior UX researcher", "UX researcher", "research lead"),
    ("sous chef", "head chef", "restaurant owner"),
    ("lab technician", "research scientist", "principal investigator"),
)
CAREER_PHRASES = {
    "entry": ("in the first year of the job", "still learning the ropes", "two years into a first real job"),
    "mid": ("with several years of experience", "settled into the role", "trusted with their own projects"),
    "senior": (
        "after more than fifteen years in the field",
        "responsible for a team",
        "known as the person others ask",
    ),
}
VALUE_GOALS = {
    "self-direction": (
        "wants the freedom to work out their own methods",
        "hopes to start an independent project",
    ),
    "stimulation": ("looks for new challenges every few months", "wants work that never feels routine"),
    "hedonism": ("protects time for the things they enjoy", "wants work that leaves room for fun"),
    "achievement": ("is aiming for a promotion within two years", "measures progress in concrete results"),
    "power": ("wants a bigger say in how budgets are spent", "aims to lead the next major initiative"),
    "security": ("values a steady, predictable routine", "wants to build savings and job stability"),
    "conformity": ("cares about doing things the accepted way", "avoids stepping on colleagues' toes"),
    "tradition": (
        "keeps the rituals their family taught them",
        "respects the way things have long been done",
    ),
    "benevolence": ("makes time to help colleagues who struggle", "puts the people close to them first"),
    "universalism": ("volunteers for causes that help strangers", "wants their work to be fair to everyone"),
}
TRAIT_PHRASES = {
    ("openness", "High"): "is curious about unfamiliar ideas",
    ("openness", "Low"): "prefers proven approaches to experiments",
    ("conscientiousness", "High"): "plans carefully and keeps detailed notes",
    ("conscientiousness", "Low"): "works in bursts and often leaves things to the last minute",
    ("extraversion", "High"): "gets energy from meetings and conversations",
    ("extraversion", "Low"): "needs quiet time alone to do their best thinking",
    ("agreeableness", "High"): "goes out of their way to keep the peace",
    ("agreeableness", "Low"): "says what they think even when it stings",
    ("neuroticism", "High"): "worries about mistakes long after they happen",
    ("neuroticism", "Low"): "stays calm when plans fall apart",
}
PAINS = {
    ("openness", "High"): "gets bored by rigid templates",
    ("openness", "Low"): "is frustrated when tools change without warning",
    ("conscientiousness", "High"): "is irritated by sloppy handovers",
    ("conscientiousness", "Low"): "struggles with long administrative forms",
    ("extraversion", "High"): "finds long solo tasks draining",
    ("extraversion", "Low"): "dreads back-to-back calls",
    ("agreeableness", "High"): "finds it hard to say no to extra work",
    ("agreeableness", "Low"): "loses patience with vague feedback",
    ("neuroticism", "High"): "feels anxious before every deadline",
    ("neuroticism", "Low"): "is annoyed when others panic over small things",
}
DECISION_HABITS = {
    "rational": "weighs options in a spreadsheet before committing",
    "intuitive": "trusts first impressions and decides quickly",
    "dependent": "asks two or three trusted people before deciding",
    "avoidant": "puts off big decisions until a deadline forces them",
}

#: Filler context factors. ``{person}`` is replaced by a name from PEOPLE, ``{first}`` by the persona's name.
FACTORS = (
    {
        "type": "person",
        "name": "{person}, my line manager",
        "tasks": ["communicating", "writing & editing"],
        "background": "{first} reports to {person} every week; after a review where {person} skimmed past a buried conclusion, {first} learned to lead with the decision needed.",
        "family": "Style",
        "ptype": "structure",
        "text": "Put the decision being asked for in the first sentence, then the supporting detail in short paragraphs.",
        "checklist": [
            "Does the reply state the decision being asked for in its first sentence?",
            "Does the reply keep the supporting detail in short paragraphs?",
        ],
    },
    {
        "type": "object",
        "name": "the shared team wiki",
        "tasks": ["writing & editing", "content creating"],
        "background": "{first} maintains pages that colleagues search weeks later, and vague headings have cost everyone time.",
        "family": "Style",
        "ptype": "format",
        "text": "Use descriptive headings and a short table of contents so each section can be found by search.",
        "checklist": [
            "Does the reply use a descriptive heading for each section?",
            "Does the reply include a short table of contents?",
        ],
    },
    {
        "type": "organization",
        "name": "the city permit office",
        "tasks": ["writing & editing", "problem solving", "information seeking"],
        "background": "{first} has had two applications returned by the permit office for missing references.",
        "family": "Content",
        "ptype": "source",
        "text": "Cite the specific rule or document section behind every requirement mentioned.",
        "checklist": [
            "Does the reply name a specific rule or document section for each requirement?",
            "Does the reply avoid stating requirements without a source?",
        ],
    },
    {
        "type": "place",
        "name": "the co-working space on Harbour Street",
        "tasks": ["planning", "problem solving"],
        "background": "{first} works there two days a week, where calls get cut short and focus comes in bursts.",
        "family": "Style",
        "ptype": "length",
        "text": "Keep answers under 150 words with the single next step highlighted.",
        "checklist": [
            "Does the reply stay under about 150 words?",
            "Does the reply highlight one single next step?",
        ],
    },
    {
        "type": "event",
        "name": "the quarterly budget review",
        "tasks": ["data analysing", "reasoning", "planning"],
        "background": "At the last review a rounded estimate was challenged and {first} had no breakdown to show.",
        "family": "Style",
        "ptype": "detail",
        "text": "Show every figure with the calculation behind it, not just the rounded total.",
        "checklist": [
            "Does the reply show the calculation behind each figure?",
            "Does the reply give exact figures rather than only rounded totals?",
        ],
    },
    {
        "type": "activity",
        "name": "my Sunday long run",
        "tasks": ["planning", "advice seeking"],
        "background": "{first} is training for a half marathon and plans around recovery after a knee strain last spring.",
        "family": "Harmless",
        "ptype": "safety",
        "text": "Flag any suggestion that adds load quickly and offer a gentler alternative alongside it.",
        "checklist": [
            "Does the reply flag suggestions that increase load quickly?",
            "Does the reply offer a gentler alternative next to each such suggestion?",
        ],
    },
    {
        "type": "concept",
        "name": "the team's definition of done",
        "tasks": ["planning", "communicating", "coding & debugging"],
        "background": "{first}'s team argued for a month about it; the compromise is a checklist everyone signs off on.",
        "family": "Style",
        "ptype": "format",
        "text": "Present work items as checkbox lists that can be pasted straight into a tracker.",
        "checklist": [
            "Does the reply present work items as a checkbox list?",
            "Does the reply keep each item short enough to paste into a tracker?",
        ],
    },
    {
        "type": "person",
        "name": "{person}, a long-time client",
        "tasks": ["communicating", "writing & editing"],
        "background": "{person} has worked with {first} for years, reads every email on a phone between meetings and once complained about a wall of jargon.",
        "family": "Style",
        "ptype": "tone",
        "text": "Write in a warm, plain-spoken tone with no jargon or acronyms.",
        "checklist": [
            "Does the reply use a warm, plain-spoken tone?",
            "Does the reply avoid jargon and unexplained acronyms?",
        ],
    },
    {
        "type": "object",
        "name": "the 2016 ThinkPad I work on",
        "tasks": ["coding & debugging", "problem solving", "information seeking"],
        "background": "The laptop struggles with heavy software, and {first} has lost afternoons to installs that never finished.",
        "family": "Content",
        "ptype": "constraint",
        "text": "Recommend only lightweight tools that run on modest hardware, and say what each needs to run.",
        "checklist": [
            "Does the reply recommend only lightweight tools?",
            "Does the reply state what each recommended tool needs to run?",
        ],
    },
    {
        "type": "organization",
        "name": "the neighbourhood residents' association",
        "tasks": ["communicating", "content creating", "planning"],
        "background": "{first} volunteers as its secretary; members range from students to retirees.",
        "family": "Harmless",
        "ptype": "sensitivity",
        "text": "Word things inclusively, with no assumptions about age, income or household.",
        "checklist": [
            "Does the reply avoid assumptions about age, income or household?",
            "Does the reply use inclusive wording throughout?",
        ],
    },
    {
        "type": "event",
        "name": "the annual industry conference in Lisbon",
        "tasks": ["content creating", "brainstorming", "writing & editing"],
        "background": "{first} has attended for three years; the talks that landed best were built around one story.",
        "family": "Content",
        "ptype": "example",
        "text": "Build the material around one concrete real-world story rather than a list of abstract points.",
        "checklist": [
            "Does the reply build around one concrete real-world story?",
            "Does the reply avoid a list of abstract points?",
        ],
    },
    {
        "type": "concept",
        "name": "personal data from customers",
        "tasks": ["data analysing", "coding & debugging", "communicating"],
        "background": "{first} sat through a data-protection audit last year after a spreadsheet was shared too widely.",
        "family": "Harmless",
        "ptype": "privacy",
        "text": "Suggest ways to work with anonymised or aggregated records, and point out where private details could leak.",
        "checklist": [
            "Does the reply suggest working with anonymised or aggregated records?",
            "Does the reply point out where private details could leak?",
        ],
    },
    {
        "type": "place",
        "name": "my parents' house in the countryside",
        "tasks": ["planning", "advice seeking"],
        "background": "{first} visits every other weekend; the connection is patchy and evenings belong to family.",
        "family": "Content",
        "ptype": "recommendation",
        "text": "Recommend options that work offline and can be finished in short sittings.",
        "checklist": [
            "Does the reply recommend options that work offline?",
            "Does the reply break the work into short sittings?",
        ],
    },
    {
        "type": "activity",
        "name": "my Tuesday evening Spanish class",
        "tasks": ["learning", "information seeking"],
        "background": "{first} started classes to connect with colleagues abroad and learns best by comparing with English.",
        "family": "Content",
        "ptype": "perspective",
        "text": "Explain new ideas by contrasting them with something already familiar, one comparison at a time.",
        "checklist": [
            "Does the reply explain new ideas by contrast with something familiar?",
            "Does the reply make one comparison at a time?",
        ],
    },
)


def _side(name, background, tasks, ptype, text, checklist, changed, changed_checklist):
    return {
        "name": name,
        "background": background,
        "tasks": tasks,
        "ptype": ptype,
        "text": text,
        "checklist": checklist,
        "changed": changed,
        "changed_checklist": changed_checklist,
    }


#: Contrastive pairs: same type and family, mutually exclusive preferences; ``changed`` is each side's A'.
PAIRS = (
    {
        "type": "person",
        "family": "Style",
        "sides": (
            _side(
                "{person}, my mentor",
                "{person} has coached {first} for two years and never sugar-coats a review.",
                ["writing & editing", "advice seeking"],
                "tone",
                "Feedback on my drafts should be blunt and direct, listing every weakness plainly.",
                [
                    "Does the reply state weaknesses plainly, without softening?",
                    "Does the reply list every weakness it finds?",
                ],
                "Feedback on my drafts should be gentle and encouraging, naming only the most important weakness.",
                [
                    "Does the reply frame its feedback gently and encouragingly?",
                    "Does the reply name only the most important weakness?",
                ],
            ),
            _side(
                "{person}, the new intern I supervise",
                "{first} took on {person} this season; early criticism knocked their confidence.",
                ["communicating", "writing & editing"],
                "tone",
                "Feedback should be gentle and encouraging, opening with what works before any criticism.",
                [
                    "Does the reply open with what works?",
                    "Does the reply keep criticism gentle and encouraging?",
                ],
                "Feedback should be brisk and matter-of-fact, opening with the biggest problem.",
                [
                    "Does the reply open with the biggest problem?",
                    "Does the reply keep a brisk, matter-of-fact tone?",
                ],
            ),
        ),
    },
    {
        "type": "object",
        "family": "Style",
        "sides": (
            _side(
                "the grant proposal for the library project",
                "{first} is drafting it against a strict page limit set by the funder.",
                ["writing & editing", "planning"],
                "length",
                "Keep every section as short as possible, one tight paragraph per point.",
                [
                    "Does the reply keep each section short?",
                    "Does the reply use one tight paragraph per point?",
                ],
                "Develop every section at length, with several paragraphs per point.",
                [
                    "Does the reply develop each section at length?",
                    "Does the reply give several paragraphs per point?",
                ],
            ),
            _side(
                "the monthly newsletter for volunteers",
                "Volunteers told {first} they read it slowly over weekend coffee.",
                ["content creating", "writing & editing"],
                "length",
                "Write long, chatty pieces with room for anecdotes and asides.",
                [
                    "Does the reply write at length in a chatty voice?",
                    "Does the reply make room for anecdotes and asides?",
                ],
                "Write short, crisp pieces that stick to the facts without asides.",
                [
                    "Does the reply keep pieces short and crisp?",
                    "Does the reply stick to the facts without asides?",
                ],
            ),
        ),
    },
    {
        "type": "organization",
        "family": "Style",
        "sides": (
            _side(
                "Northwind Logistics, our biggest client",
                "Their procurement team forwards every report to a legal reviewer.",
                ["writing & editing", "communicating"],
                "format",
                "Reports should be formal, in full sentences, with no bullet points.",
                [
                    "Does the reply use a formal register?",
                    "Does the reply write in full sentences without bullet points?",
                ],
                "Reports should be casual, in short fragments, built from bullet points.",
                [
                    "Does the reply use a casual register?",
                    "Does the reply build the content from bullet points?",
                ],
            ),
            _side(
                "Brightside Studio, the design agency we partner with",
                "Their designers skim everything on a shared board between sprints.",
                ["communicating", "brainstorming"],
                "format",
                "Material should be casual, visual and mostly bullet points.",
                [
                    "Does the reply keep a casual voice?",
                    "Does the reply present most content as bullet points?",
                ],
                "Material should be formal, text-heavy and written in full paragraphs.",
                ["Does the reply keep a formal voice?", "Does the reply write in full paragraphs?"],
            ),
        ),
    },
    {
        "type": "place",
        "family": "Harmless",
        "sides": (
            _side(
                "the hospital ward where I do placements",
                "A near-miss with a medication chart taught {first} to double-check everything there.",
                ["problem solving", "advice seeking"],
                "safety",
                "Always flag clinical risks first and tell me to check with a supervisor before acting.",
                [
                    "Does the reply flag clinical risks before anything else?",
                    "Does the reply tell me to check with a supervisor before acting?",
                ],
                "Mention clinical risks only briefly at the end and trust me to decide when to involve a supervisor.",
                [
                    "Does the reply keep risk notes brief and at the end?",
                    "Does the reply leave the decision to involve a supervisor to me?",
                ],
            ),
            _side(
                "the university simulation lab",
                "Mannequins and scripted scenarios let {first} practise without consequences.",
                ["learning", "problem solving"],
                "safety",
                "Skip safety warnings and supervisor reminders and let me try bold approaches freely.",
                [
                    "Does the reply leave out safety warnings?",
                    "Does the reply encourage trying bold approaches?",
                ],
                "Flag every risk first and remind me to check with a supervisor before trying anything.",
                [
                    "Does the reply flag every risk first?",
                    "Does the reply remind me to check with a supervisor?",
                ],
            ),
        ),
    },
    {
        "type": "event",
        "family": "Content",
        "sides": (
            _side(
                "the weekly stand-up with my squad",
                "The stand-up is capped at fifteen minutes and overruns annoy everyone.",
                ["communicating", "planning"],
                "topic",
                "Cover only blockers and decisions, leaving out progress updates entirely.",
                [
                    "Does the reply cover blockers and decisions?",
                    "Does the reply leave out progress updates?",
                ],
                "Cover only progress updates and wins, leaving out blockers entirely.",
                ["Does the reply cover progress updates and wins?", "Does the reply leave out blockers?"],
            ),
            _side(
                "the monthly all-hands meeting",
                "Leadership uses it to keep morale up across three offices.",
                ["content creating", "communicating"],
                "topic",
                "Cover progress updates in full, celebrating each team's wins before anything else.",
                [
                    "Does the reply cover progress updates in full?",
                    "Does the reply celebrate each team's wins first?",
                ],
                "Cover blockers and open decisions in full before mentioning any team's wins.",
                [
                    "Does the reply cover blockers and open decisions in full?",
                    "Does the reply put wins after blockers?",
                ],
            ),
        ),
    },
    {
        "type": "activity",
        "family": "Content",
        "sides": (
            _side(
                "grading first-year essays",
                "{first} marks sixty essays a term and students rarely read margin notes on commas.",
                ["writing & editing", "reasoning"],
                "topic",
                "Comments should focus on the big-picture argument and ignore grammar and spelling.",
                [
                    "Does the reply focus its comments on the overall argument?",
                    "Does the reply ignore grammar and spelling slips?",
                ],
                "Comments should focus on sentence-level clarity, line by line, rather than the overall argument.",
                ["Does the reply comment on sentence-level clarity?", "Does the reply work line by line?"],
            ),
            _side(
                "copy-editing the department journal",
                "The journal's editor returns anything that breaks house style.",
                ["writing & editing"],
                "topic",
                "Comments should focus on grammar, spelling and house style, leaving the argument alone.",
                [
                    "Does the reply focus on grammar, spelling and house style?",
                    "Does the reply leave the argument alone?",
                ],
                "Comments should focus on the structure of the argument and ignore small slips in style.",
                [
                    "Does the reply focus on the structure of the argument?",
                    "Does the reply ignore small slips in style?",
                ],
            ),
        ),
    },
)

SHIFT_REASONS = (
    "a frank conversation after a missed deadline made it clear the old approach was not working",
    "a reorganisation changed who reads the work and what they need from it",
    "after a rough month, what used to help started getting in the way",
    "a trusted colleague pointed out that the old habit was costing everyone time",
    "a new season brought new people, and the old way no longer fitted them",
)
STORIES = {
    "A": (
        "{first} is busy with {task} and {factor} is part of it again; the week is full but this cannot wait.",
        "Between other commitments, {first} has to deal with {task}, where {factor} plays a part as usual.",
    ),
    "change": (
        "Things have shifted for {first}: {reason}. Now {first} is dealing with {task} involving {factor} and sees it differently.",
    ),
    "A_prime": (
        "{first} comes back to {task} with {factor} in the picture, sticking with the approach that has worked since the change.",
        "Another round of {task} involves {factor}; {first} knows by now what kind of help works.",
    ),
    "B": (
        "{factor} comes up while {first} handles {task}, and {first} has clear expectations about it.",
        "{first} sets aside an afternoon for {task}, with {factor} shaping how it has to be done.",
    ),
    "other": (
        "A new week brings {task} for {first}, with {factor} in the background.",
        "{first} squeezes {task} in before a deadline; {factor} matters here.",
        "After a long day, {first} turns to {task}, which touches on {factor}.",
    ),
}
TASKS = {
    "information seeking": (
        "some background research",
        (
            "Can you give me an overview of what I should know before dealing with {factor}?",
            "I keep hearing different things about {factor}. What are the facts I should check first?",
        ),
    ),
    "learning": (
        "learning something new",
        (
            "I want to get better at this quickly. Can you teach me the basics I need for {factor}?",
            "Could you walk me through the key ideas I need to handle {factor} with confidence?",
        ),
    ),
    "reasoning": (
        "a tricky trade-off",
        (
            "Can you help me think through the options I have with {factor} this week?",
            "I have two ways to handle {factor} and both have downsides. Can you help me compare them?",
        ),
    ),
    "planning": (
        "planning the next few weeks",
        (
            "Can you help me plan the next two weeks around {factor}?",
            "I need a realistic schedule for everything coming up with {factor}. Can you draft one?",
        ),
    ),
    "content creating": (
        "preparing new material",
        (
            "Could you draft some material I can use for {factor}?",
            "I need a short handout for {factor} by Friday. Can you put a first version together?",
        ),
    ),
    "communicating": (
        "a message that needs sending",
        (
            "Can you help me write a message about {factor} that I need to send today?",
            "I have to reply to an email about {factor} before tomorrow morning. Can you draft it?",
        ),
    ),
    "writing & editing": (
        "a piece of writing",
        (
            "Could you help me write up a short piece related to {factor}?",
            "I'm writing a summary that involves {factor}. Can you help me structure and word it?",
        ),
    ),
    "coding & debugging": (
        "a script that keeps failing",
        (
            "Can you help me fix a small script I use for {factor}? It crashes on empty input.",
            "I want to automate a repetitive task for {factor} with a short Python script. Can you write it?",
        ),
    ),
    "problem solving": (
        "a problem that came up",
        (
            "Something went wrong with {factor}. Can you help me work out what to do next?",
            "A deadline slipped because of an issue with {factor}. How should I recover from it?",
        ),
    ),
    "data analysing": (
        "a set of numbers to make sense of",
        (
            "Can you help me make sense of last month's numbers for {factor}?",
            "I have a small table of figures about {factor}. What should I look at first, and how?",
        ),
    ),
    "advice seeking": (
        "a decision to make",
        (
            "What would you advise me to do about {factor} this month?",
            "I'm unsure how to handle {factor} going forward. What would you suggest?",
        ),
    ),
    "brainstorming": (
        "a brainstorm",
        (
            "Can you brainstorm some ideas with me for {factor}?",
            "I need fresh ideas for {factor}; the usual ones feel stale. Can you suggest some?",
        ),
    ),
}
REPLY_OPENERS = (
    "Sure, here is a first version.",
    "Happy to help. Here's a starting point.",
    "Here's a draft you can work from.",
    "Good question. Here's how I would approach it.",
)
REPLY_REVISED = (
    "Here's a revised version.",
    "Thanks, that helps. I've reworked it.",
    "Understood. Here's an updated take.",
)
REPLY_BODY = (
    "Begin by naming the goal in one line so everyone knows what success looks like.",
    "List the two or three constraints that matter most and deal with those first.",
    "Set a date for a quick check-in so problems surface early.",
    "Keep a short record of what you decided and why; it saves time later.",
    "Ask the people affected for one piece of input before you finalise anything.",
    "Split the work into small pieces you can finish in one sitting.",
    "Close with a clear request so the next step is obvious.",
)
HINTS = (
    "Hmm, with {factor} in the picture I'd rather it {x}.",
    "That's not quite how things go with {factor} for me. Could it {x}?",
    "Last time with {factor}, it only worked when the answer would {x}.",
    "Close, but for {factor} I need it to {x}.",
)
CLOSINGS = ("Thanks, this is what I needed.", "Perfect, that works.", "Great, I can use this.")
