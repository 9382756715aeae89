"""Form keys named by their purpose: what a business form's printed key is FOR, as a question names it.

A writer who has not seen the page names a form's key by the job it does, not by its printed words: the person a
reply goes back to is the memo's "FROM:", the day "our office got it" is its "Date Received", the range of goods a
promotion is about is its "BRAND" or "PRODUCT", the account "this is charged to" its "Account No." or "Budget". The
lexicon (``paraphrase_en.LEXICON``) lists each concept's words; this table lists the purposes that business forms at
large give their keys (from the keys realdocs-dev's development forms print and general knowledge of memos, routing
slips, requisitions, promotion and lab request forms), each with the English that names the purpose and the keys a
form prints for it. A purpose is named by what happens to the value, not by a writer's words for the key:

- **where a reply goes**: "the reply", "respond to", "write back to" -> the sender's keys (FROM, Prepared by), and
  not the recipient ("Who should get the reply?" names a receiving verb, but the reply goes to the sender);
- **the day the document was received**: a when-question with a verb of coming into hand (get, reach, land, log,
  stamp) -> "Date Received", "Rec'd", and not any other date;
- **who else is kept informed**: "kept informed", "also going to", "as well" -> CC, Copies to;
- **the goods a form is about**: a product line, a kind of cigarette or product, what is promoted / offered /
  sampled -> Brand, Product, Item, Description (forms print any of them for the same purpose);
- **where the cost is booked**: "charged to which account", a budget, a cost centre -> Account No., Budget, Charge;
- **a unit inside the company**: a part or branch of the organisation, in-house -> Department, Division (not an
  outside agency);
- **when it is needed by**: "needed by", "required by", "at the latest" -> the deadline's keys, not the issue date;
- **who acted for the document** (who-questions only): compiled, put together, sent in -> the agent keys;
  okayed, signed off, gave the go-ahead -> Approved by, Signature; wanted, commissioned -> Requested by;
- **whom the work is done for**: on whose behalf, for which company, whose account -> Client, Customer, Account name;
- **what is left** of a budget: left, unspent, still available -> Balance, Bal. Available (not a total);
- **who is to read it**: to whom, whose desk / in-tray / inbox, headed / destined for -> TO, Attention;
- **who put it forward** (tested first): put forward for approval, sent up the line -> the submitter (the sender's
  keys: Submitted by), not the requester nor the approver;
- **what it is, in words** (only when nothing else is named): described, explained -> Description.

``ROWS_FIRST`` are tested before the lexicon (their purpose rules out the concepts a generic word would cue:
"reply" the recipient, "charged to" the amount), ``ROWS_MORE`` after it (a purpose the lexicon's words do not
reach, ruled out by an earlier concept as any lexicon row is), ``ROWS_ELSE`` only when nothing else is named. Rows
are the lexicon's: (concept, cue in the lower-cased question, printed keys, concepts it rules out); a row of a lexicon
concept keeps its name and lists no keys (``paraphrase_en`` looks up the lexicon's), a new purpose lists its own. As
for the lexicon, the keys are looked up only when the question's own words match no box well
(``paraphrase.PARAPHRASE_BELOW``) and the page does not print the cue's words (``paraphrase_en.printed_concepts``).

Example:
    >>> import re
    >>> [name for name, cue, _, _ in ROWS_FIRST if re.search(cue, "who should get the reply?")]
    ['sender']
    >>> [name for name, cue, _, _ in ROWS_FIRST if re.search(cue, "when did our office get it?")]
    ['received']
"""

from __future__ import annotations

Row = tuple[str, str, tuple[str, ...], tuple[str, ...]]

# the goods a form is about: what forms print as its brand, product, item or description
_GOODS_KEYS = ("brand", "brand name", "item brand", "brands", "product", "products", "item", "description")
# a buyer's own purchase: the day of a receipt, not of a document's arrival
_BUYER = (
    r"\b(?:i|me|my|i'\w+|buy|bought|purchas\w*|shop\w*|order\w*|paid|pay|spent|spend|meal|fuel|receipt|bill|invoice|"
    r"sale|till)\b"
)
_WHO = r"^\W*(?:and )?(?:who|whom|whose|which (?:person|employee|individual|manager|officer|staff member))\b"

ROWS_FIRST: tuple[Row, ...] = (
    (  # the reply goes back to the sender: "who should get the reply?", "Who do I respond to?"
        "sender",
        r"\b(?:the|a|any|my|our|your|their|all) (?:repl(?:y|ies)|responses?)\b(?! (?:code|rate|date|time|card))|"
        r"\b(?:repl(?:y|ied)|respond(?:ed)?|write back|get back|answer)(?: \w+)? to\W*$|"
        r"\bto whom\b.*\b(?:reply|respond|write back|get back)\b|\breturn (?:it|this|the form) to\b",
        (),
        ("recipient", "copies"),
    ),
    (  # the day the document came into hand: "When did it reach us?", "When was it logged in?"; not a buyer's own
        # purchase ("When did I get these?" asks a receipt's date: no first person singular, no buying word)
        "received",
        # (not a passive "get": "When did it get printed?")
        rf"^(?!.*{_BUYER})\W*when\b.*\b(?:(?:get|gets|got|gotten)(?! \w+(?:ed|en|wn)\b)|obtain(?:ed)?|reach(?:ed|es)?|"
        r"land(?:ed|s)?|log(?:ged)?|"
        r"stamp(?:ed)?|turn(?:ed)? up|show(?:ed)? up|in hand|receiv\w*)\b|\bdate stamp\w*\b|"
        r"\bstamp(?:ed)? (?:date|day)\b|\bday (?:it|this) (?:came|arrived|got|reached)\b",
        (),
        ("date",),
    ),
    (  # who else is kept informed: "Who was kept informed?", "who is it also going to?"
        "copies",
        r"\b(?:kept|keep|keeping) (?:\w+ )?(?:informed|posted|in the picture|updated)\b|\binformed\b|\bfyi\b|"
        r"\bwho also\b|\balso (?:going|goes|went|addressed|directed|informed|gets?|receives?|got)\b|"
        rf"{_WHO}.*\b(?:as well|besides)\b|\bextra cop\w*\b",
        (),
        ("recipient", "sender"),
    ),
    (  # the goods a form is about, named by their line or kind: "Which product line?", "what cigarette type?"
        "goods",
        r"\b(?:product|cigarette|tobacco) (?:lines?|famil(?:y|ies)|names?|variants?|styles?|range)\b|"
        r"\blines? of (?:cigarettes|products|goods)\b|\btrade ?(?:name|mark)s?\b|"
        r"\b(?:which|what) (?:kind|type|sort|variety) of (?:cigarettes?|products?|goods|items?)\b|"
        r"\bwhat (?:is|was|are|were)(?: being)? (?:promoted|advertised|marketed|featured|sampled|offered|sold)\b|"
        r"\b(?:which|what) (?:cigarette|tobacco|consumer) (?:products?|brands?|items?)\b",
        _GOODS_KEYS,
        ("brand", "product", "subject"),
    ),
    (  # where the cost is booked: "Which account is it charged to?", "what budget?"
        "account",
        # ("which budget" as a noun: "Which budget is it from?", not an adjective: "Which budget product ...?")
        r"\b(?:which|what) (?:account|budget|fund|cost cent(?:er|re)|charge code)(?=\W*$| (?:is|was|are|were|does|did|"
        r"do|has|had|will|should|would|pays?|paid|covers?|covered|funds?|funded|to|for|from|under|of|number|no|code)\b)|"
        r"\bcharged? (?:it |this )?to\b|"
        r"\bbook(?:ed)? (?:to|against|under)\b|\bbudget (?:code|number|no|line|account|item)\b|"
        r"\b(?:from|out of|under) (?:which|what|whose) (?:budget|account|fund)\b|\bcost cent(?:er|re)\b|"
        r"\bcharge (?:number|code)\b",
        ("account", "account no", "acct no", "account number", "acct", "budget", "charge", "charge to", "cost center"),
        ("payable", "total", "customer"),
    ),
    (  # a unit inside the company, not an outside body: "Which part of the organisation is this for?"
        "department",
        r"\b(?:part|parts|section|branch|arm|corner) of the (?:company|organi[sz]ation|firm|business|corporation)\b|"
        r"\bin-?house\b|\binternal (?:team|unit|group|section)\b",
        (),
        ("agency",),
    ),
    (  # what is left of a budget or an account: "How much is left?", "left?"; not a side ("the left column")
        "funds_left",
        r"\b(?:how much|what|amount|money|funds?|budget|sum)\b.*\bleft\b"
        r"(?! (?:side|hand|column|margin|corner|edge|half|of|my|our|your|his|her|their|the|a|an)\b)|"
        r"^\W*left\W*$|\bleft (?:over|to spend)\b|\bunspent\b|\bstill (?:available|free)\b",
        ("balance", "new balance", "bal", "current bal", "bal available", "available", "remaining", "outstanding"),
        ("balance", "total", "payable"),
    ),
    (  # when it is needed by: "When is it needed by?", "what is the latest it can come back?"
        "deadline",
        r"\b(?:needed|required|wanted|expected|due back|back) by\b|\bat the latest\b|\blatest (?:it|they|we)\b|"
        r"\bmust (?:\w+ )?(?:be )?(?:done|finished|completed?|submitted|returned|in|back|received)\b|"
        r"\blast (?:possible )?day\b",
        (),
        ("date", "received", "total"),
    ),
)

ROWS_FIRST += (
    (  # the work a form describes: "What is this project about?", "What does the job involve?", "the gist"
        "description",
        r"^\W*what\b[^?]*\b(?:this|the|that) (?:project|job|work|study|task|assignment|programme|program|request|order|"
        r"requisition)\b(?: \w+){0,2} (?:about|for|involve[sd]?|entails?|covers?)\W*$|"
        r"\b(?:does|did|do) (?:this|the|that|it) (?:\w+ )?(?:involve|entail|cover)\b|\bgist\b|\bsummary\b|"
        r"\bin (?:one|a) (?:line|sentence)\b",
        ("description", "details", "particulars", "desc", "project description", "job description"),
        ("requester",),
    ),
    (  # the person a form is filled in about: "Which person is this form filled out for?", "whose record is this?"
        "person",
        r"\b(?:filled (?:out|in)|completed|made out) (?:for|about|on behalf of)\W*$|"
        r"\bwhose (?:form|record|file|details|personnel)\b|"
        r"\b(?:who|which (?:person|employee|individual)) is (?:this|the) (?:form|record|file|sheet) (?:about|on)\b",
        ("name", "full name", "employee name", "employee", "name of employee"),
        ("recipient", "requester", "customer"),
    ),
    (  # an outside firm doing the work: "Which outside firm is doing this job?", "which contractor?"
        "supplier",
        r"\boutside (?:firm|company|supplier|contractor|vendor|agency|party|house)\b|\bcontractors?\b|"
        r"\b(?:which|what) (?:firm|company|house) (?:is |was |will be )?(?:doing|handling|carrying out|performing|"
        r"running|producing|printing)\b",
        (),
        ("customer",),
    ),
)

ROWS_FIRST += (
    (  # who put a request forward for approval is its submitter, not the approver nor "Requested by": "Who put this
        # forward?", "who sent it up the line?"
        "sender",
        rf"{_WHO}.*\bput (?:\w+ ){{0,2}}(?:forward|up for)\b|\bsen(?:t|d|ds|ding) (?:\w+ )?up the line\b|"
        r"\bput (?:\w+ ){0,2}forward for\b",
        (),
        ("requester", "signature"),
    ),
)

ROWS_MORE: tuple[Row, ...] = (
    (  # who acted for the document: "Who compiled it?", "person who sent in this request"
        "sender",
        rf"{_WHO}.*\b(?:compil\w*|put (?:\w+ )?together|"
        r"turn(?:ed|s)? (?:\w+ )?in|sen(?:t|ds) (?:\w+ )?in|reported|drafted|wr(?:ote|itten) (?:\w+ )?up|spotted|"
        r"observed|noticed|witnessed|"
        r"responsible|in charge)\b|\bperson who (?:\w+ ){0,2}(?:sent in|compiled|wrote)\b",
        (),
        (),
    ),
    (  # who approved it: "Who okayed it?", "who signed off on this?"
        "signature",
        rf"{_WHO}.*\b(?:ok(?:ay)?(?:ed|'d)?|sign(?:ed)? off|green.?light\w*|sanction\w*|cleared|gave (?:\w+ )?"
        r"(?:go-ahead|go ahead|ok|okay|approval|permission|sign-off)|vouch\w*|countersign\w*)\b",
        (),
        (),
    ),
    (  # who wanted it: "Who commissioned this?", "on whose behalf?"
        "requester",
        rf"{_WHO}.*\b(?:wanted|needs?|needed|asked|commissioned|initiated|ordered|requisitioned)\b|"
        r"\bwhose request\b|\bat whose\b",
        (),
        (),
    ),
    (  # whom the work is done for: "On whose behalf?", "For which company is the study?"
        "customer",
        r"\bon (?:whose|which (?:company|firm|client)'s|somebody's|someone's) behalf\b|\bwhose account\b|"
        r"\bfor (?:which|what) (?:company|firm|business|organi[sz]ation|party|client)\b|"
        r"\bwho (?:is|was|are|were) (?:the |this )?(?:work|job|study|project|service|test)s? (?:\w+ )?for\b",
        (),
        ("recipient",),
    ),
    (  # who is to read it: "To whom is it going?", "whose desk is it for?"
        "recipient",
        r"\bto whom\b|\bwhose (?:attention|desk|in-?trays?|inbox|in-?box|pigeon-?hole|mailbox|letterbox)\b|"
        r"\b(?:in-?tray|inbox|in-?box|pigeon-?hole|mailbox) (?:is )?(?:it|this) (?:\w+ )?(?:going|headed|sent)\b|"
        r"\b(?:headed|destined|aimed|going) (?:to|for)\b|"
        rf"{_WHO}.*\b(?:should|must|is to|are to|will|would) (?:read|see|handle|action|deal with|look at)\b",
        (),
        (),
    ),
)

ROWS_ELSE: tuple[Row, ...] = (
    (  # what it is, in words: "How is it described?"
        "description",
        r"\bdescri\w*\b|\bexplain\w*\b|\bin words\b|\bparticulars\b",
        ("description", "details", "particulars", "desc"),
        (),
    ),
)
