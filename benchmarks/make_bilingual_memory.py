"""Generate ``benchmarks/data/bilingual_memory.json``: a bilingual (zh/en) long-horizon memory set.

What the set is
---------------
For each of two languages (simplified Chinese ``zh`` and English ``en``) the file holds
one long companion-style chat history of 1,350 turns (675 user/assistant pairs) split
into 60 sessions spread over about six months (2025-01-06 .. 2025-07-01), plus 40
questions asked *after* the last turn.  Every question targets one personal fact that
the user stated exactly once, in a natural sentence, somewhere in the history
(``fact_turn_index`` is the index of that user turn in ``turns``).  It is meant to
measure whether a retriever (MiniLM, WordLlama, BM25 over jieba tokens, ...) can page
the right turn back into a small token budget (e.g. 1,000 tokens) when the question
uses *other words* than the fact.

It mirrors the shape of the reference test "40 personal facts said once in 1,350
turns of chat, asked later in other words, 1,000-token budget", but the content is
our own.

How it was built
----------------
* The 40 facts per language, their paraphrased questions, answers and the short
  assistant acknowledgements were written by hand for this project.  The two
  languages follow the same 40 categories in the same order (names, pets,
  allergies, jobs, places, dates, hobbies, foods, family, health, plans,
  possessions, numbers) but use local names/places, so results can be compared
  across languages.
* Questions are paraphrases: most share no content word with the fact sentence
  (``kind: "semantic"``); a few share one distinctive entity such as the pet's or
  sister's name (``kind: "entity"``).  The answer itself never appears in the
  question.
* Filler is generated from about 300 hand-written small-talk templates per
  language (work, weather, food, shows, sleep, weekends, feelings, exercise,
  family, pets, travel, health, money, chores, friends, commute, tech, and small
  requests for advice) with slot variation (names, dishes, shows, places, ...),
  optional openers/tails and season-aware weather lines; no user filler turn
  repeats verbatim.  Each session mixes three focus topics with random others.
  Assistant turns are short replies that match the user line (a line's own
  reply, or a positive / negative / neutral pool for its topic).
* Many filler lines are deliberate *distractors*: they talk about the same
  topics as the facts (a sister, the cat, the dog, travel, allergies, the
  dentist, running, climbing, books, grandparents, the boss, ...) without
  stating the fact, and some are fact-like details about *other* people (a
  cousin's new job, a friend who adopted a shelter cat, a coworker's allergy, a
  friend's piano recital, ...).
* Each answer's key strings (e.g. ``Portland`` / ``成都``) occur in exactly one
  turn of the language's history, the fact turn; the generator asserts this.
* Both languages share one timeline plan (session days, sizes, fact positions),
  so each fact sits at the same depth in zh and en.  Timestamps are UTC; the
  English user lives in US Pacific time, the Chinese user in Beijing time.
* Everything is driven by ``random.Random`` with a fixed seed, so running the
  script again reproduces the same JSON byte for byte.

Besides the required fields, each question carries ``answer`` (short expected
answer), ``kind`` (``semantic`` / ``entity``) and ``category``; each language
carries ``questions_asked_at`` (two days after its last turn).

The set was written from scratch for memsched; it is not taken from, or derived
from, any public benchmark or dataset.

Usage::

    python benchmarks/make_bilingual_memory.py            # writes benchmarks/data/bilingual_memory.json
    python benchmarks/make_bilingual_memory.py --out x.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
from datetime import datetime, timedelta
from pathlib import Path

SEED = 20250106
N_SESSIONS = 60
N_PAIRS = 675  # 1,350 turns
START_DATE = datetime(2025, 1, 6)
SPAN_DAYS = 176
DEFAULT_OUT = Path(__file__).resolve().parent / "data" / "bilingual_memory.json"

# ---------------------------------------------------------------------------
# Facts.  Same 40 categories, same order, in both languages.
# Each fact: text (the user turn, said once), reply (assistant acknowledgement,
# never repeating the answer), question (asked after the history, paraphrased),
# answer, keys (strings that must occur ONLY in the fact turn), kind, category.
# ---------------------------------------------------------------------------

EN_FACTS = [
    dict(
        category="pets",
        kind="semantic",
        text="Okay so update: we did it, we adopted the rescue dog! Three-year-old beagle mix, total goofball, and we named him Biscuit.",
        reply="Congratulations!! A new family member. How is he settling in so far?",
        question="What do we call the animal we took in from the shelter?",
        answer="Biscuit",
        keys=["Biscuit"],
    ),
    dict(
        category="job",
        kind="semantic",
        text="First day at the new place done! I'm officially a sound engineer at a podcast studio now, mostly cleaning up interview recordings.",
        reply="That's exciting! How did the first day feel?",
        question="What do I do for a living these days?",
        answer="sound engineer at a podcast studio",
        keys=["sound engineer"],
    ),
    dict(
        category="names",
        kind="semantic",
        text="Oh, I realize I keep saying 'him' — my boyfriend's name is Marcus, by the way. We've been together about two years.",
        reply="Good to know, thanks for filling me in! Two years is lovely.",
        question="Who am I in a relationship with?",
        answer="Marcus (her boyfriend)",
        keys=["Marcus"],
    ),
    dict(
        category="places",
        kind="semantic",
        text="Funny, the snow today reminds me of home. I grew up in this tiny town in Vermont called Bellows Falls, like three thousand people total.",
        reply="That sounds like a place where everybody knows everybody. Do you miss it?",
        question="Which little place was I raised in?",
        answer="Bellows Falls, Vermont",
        keys=["Bellows Falls", "Vermont"],
    ),
    dict(
        category="allergies",
        kind="semantic",
        text="Ugh, the office ordered seafood for the team lunch and I couldn't touch it. I'm seriously allergic to shellfish — one shrimp and my throat closes up.",
        reply="That sounds scary. Good that you steered clear — did you get something else?",
        question="Is there anything I can't eat for medical reasons?",
        answer="shellfish (severe allergy)",
        keys=["shellfish", "shrimp"],
    ),
    dict(
        category="hobbies",
        kind="semantic",
        text="I've been practicing the cello for about eight months now, mostly in the evenings after dinner. My neighbors have been very patient.",
        reply="Eight months of steady practice is impressive! What piece are you working on?",
        question="Which instrument have I been learning to play?",
        answer="the cello",
        keys=["cello"],
    ),
    dict(
        category="family",
        kind="entity",
        text="Big family news: my sister Hannah is moving to Portland next month! She landed a nursing job at a hospital out there.",
        reply="What a big change for her! How are you feeling about her being farther away?",
        question="Where did Hannah end up working?",
        answer="Portland (as a nurse at a hospital)",
        keys=["Portland", "Hannah"],
    ),
    dict(
        category="pets",
        kind="entity",
        text="My cat Miso turned seventeen this week, and the vet says she's in great shape for an old lady.",
        reply="Happy birthday to her! That's wonderful news from the vet.",
        question="How old is Miso now?",
        answer="seventeen",
        keys=["seventeen", "Miso"],
    ),
    dict(
        category="dates",
        kind="semantic",
        text="My birthday's on March 14th — yes, Pi Day, and yes, I've heard every single pie joke.",
        reply="Ha, I promise not to add another one. Any plans for it?",
        question="On what date do I get a year older?",
        answer="March 14",
        keys=["March 14th"],
    ),
    dict(
        category="food",
        kind="semantic",
        text="I've been vegetarian since college, so going on nine years now. People still ask where I get my protein.",
        reply="Ha, the eternal protein question. Nine years is a long stretch!",
        question="How long has it been since I stopped eating meat?",
        answer="about nine years (since college)",
        keys=["vegetarian"],
    ),
    dict(
        category="health",
        kind="semantic",
        text="Got my blood test results back. Doctor says my iron is really low, so I'm on supplements for the next three months.",
        reply="Good that they caught it. Have you been feeling more tired than usual?",
        question="What did the lab work show I was deficient in?",
        answer="iron",
        keys=["my iron", "supplements"],
    ),
    dict(
        category="names",
        kind="entity",
        text="My best friend since kindergarten is Priya — she lives in Austin now, so we mostly do long phone calls.",
        reply="Friends from that far back are special. Long calls are a great way to stay close.",
        question="Which city is Priya based in these days?",
        answer="Austin",
        keys=["Austin", "Priya", "kindergarten"],
    ),
    dict(
        category="food",
        kind="semantic",
        text="Rough week. All I want is my grandma's baked mac and cheese — that's my ultimate comfort food, nothing else comes close.",
        reply="Some recipes just feel like a hug. Do you know how she makes it?",
        question="What dish cheers me up when I'm feeling low?",
        answer="grandma's baked mac and cheese",
        keys=["mac and cheese"],
    ),
    dict(
        category="plans",
        kind="entity",
        text="I'm giving up sugar for Lent this year, starting Wednesday. Pray for me, honestly.",
        reply="That's a real commitment. What will be the hardest thing to skip?",
        question="What am I abstaining from during Lent?",
        answer="sugar",
        keys=["Lent"],
    ),
    dict(
        category="places",
        kind="entity",
        text="My commute is brutal — about forty minutes each way on BART to our office in Oakland.",
        reply="That adds up fast. Do you at least get a seat most days?",
        question="How long is my ride to the Oakland office?",
        answer="about forty minutes each way (on BART)",
        keys=["forty minutes", "BART"],
    ),
    dict(
        category="family",
        kind="semantic",
        text="My brother's baby was born last night! A little girl — they named her Juniper. I'm an aunt!!",
        reply="Congratulations, Auntie! How are mom and baby doing?",
        question="What's my niece called?",
        answer="Juniper",
        keys=["Juniper"],
    ),
    dict(
        category="possessions",
        kind="entity",
        text="I finally bought a car! A used 2016 Subaru Outback, green, about 80,000 miles on it, but it runs great.",
        reply="Congrats on the new wheels! Any road trips planned?",
        question="How many miles did the Outback have on it when I got it?",
        answer="about 80,000",
        keys=["Subaru", "80,000"],
    ),
    dict(
        category="allergies",
        kind="semantic",
        text="Note for future me: I can't take penicillin. Found out as a kid when I broke out in hives all over.",
        reply="Good to have that written down. It's worth mentioning at every appointment.",
        question="Which antibiotic am I not supposed to be given?",
        answer="penicillin",
        keys=["penicillin"],
    ),
    dict(
        category="jobs",
        kind="semantic",
        text="My dad officially retired today after thirty-one years as a mail carrier. They threw him a little party at the post office.",
        reply="What a milestone! He must have walked a million miles. How is he feeling?",
        question="What was my father's career before he stopped working?",
        answer="mail carrier",
        keys=["mail carrier", "post office"],
    ),
    dict(
        category="hobbies",
        kind="semantic",
        text="I collect vintage fountain pens — I think I'm up to thirty-something now. It's a problem, but a pretty one.",
        reply="Ha, a very elegant problem to have. Do you have a favorite?",
        question="What old items have I been accumulating?",
        answer="vintage fountain pens",
        keys=["fountain pens"],
    ),
    dict(
        category="food",
        kind="semantic",
        text="Went out for tacos with coworkers and had to pick cilantro out of every single bite. It tastes exactly like soap to me.",
        reply="That's a real thing, some people just taste it that way. Next time ask them to leave it off!",
        question="Which herb can't I stand?",
        answer="cilantro",
        keys=["cilantro"],
    ),
    dict(
        category="places",
        kind="semantic",
        text="We moved into the new apartment in Lakewood last weekend and I'm still living out of boxes.",
        reply="Moving is exhausting. Which room are you tackling first?",
        question="What neighborhood is our current home in?",
        answer="Lakewood",
        keys=["Lakewood"],
    ),
    dict(
        category="names",
        kind="semantic",
        text="My new manager is Deborah. She's nice enough but very by-the-book, spreadsheets for everything.",
        reply="Sounds like someone who likes structure. How are you getting along so far?",
        question="Who is my boss now?",
        answer="Deborah",
        keys=["Deborah"],
    ),
    dict(
        category="health",
        kind="semantic",
        text="Had my wisdom teeth pulled on Tuesday, so I've been living on smoothies and mashed potatoes.",
        reply="Ouch. Take it easy and rest up. How's the swelling?",
        question="What did the dentist take out recently?",
        answer="my wisdom teeth",
        keys=["wisdom teeth"],
    ),
    dict(
        category="family",
        kind="semantic",
        text="My parents' 40th wedding anniversary is in June, and my siblings and I are planning a surprise party.",
        reply="That's a beautiful milestone. A surprise party sounds perfect!",
        question="How long have mom and dad been married?",
        answer="40 years",
        keys=["40th"],
    ),
    dict(
        category="numbers",
        kind="semantic",
        text="Did the math tonight: I still have about $12,000 left on my student loans. Better than it was, at least.",
        reply="Progress is progress. Paying it down steadily counts for a lot.",
        question="How much college debt do I still owe?",
        answer="about $12,000",
        keys=["12,000", "student loans"],
    ),
    dict(
        category="possessions",
        kind="semantic",
        text="My grandfather left me his watch — a 1968 Omega — and I wear it every single day.",
        reply="What a special thing to carry with you. It must mean a lot.",
        question="What heirloom did I inherit from my grandpa?",
        answer="a 1968 Omega watch",
        keys=["Omega"],
    ),
    dict(
        category="plans",
        kind="entity",
        text="I signed up for the Chicago Marathon in October! Registration opened this morning and I panicked and clicked.",
        reply="That's huge! Do you have a training plan yet?",
        question="When is the Chicago race happening?",
        answer="October",
        keys=["Chicago", "Marathon"],
    ),
    dict(
        category="health",
        kind="semantic",
        text="Doctor confirmed it: mild asthma. I'm supposed to carry an inhaler with me everywhere now.",
        reply="Good to have an answer at least. How are you feeling about it?",
        question="What breathing condition was I diagnosed with?",
        answer="mild asthma",
        keys=["asthma", "inhaler"],
    ),
    dict(
        category="hobbies",
        kind="semantic",
        text="I've gotten really into bouldering — I go to the climbing gym downtown twice a week with a coworker.",
        reply="That's a great workout and a fun social thing too. Are your forearms destroyed?",
        question="What sport have I been doing a couple of times weekly?",
        answer="bouldering (indoor climbing)",
        keys=["bouldering"],
    ),
    dict(
        category="family",
        kind="semantic",
        text="My grandma had a hip replacement last week. She's staying with my aunt while she recovers.",
        reply="I hope her recovery goes smoothly. It's good she has family close by.",
        question="What operation did my grandmother go through?",
        answer="a hip replacement",
        keys=["hip replacement"],
    ),
    dict(
        category="plans",
        kind="semantic",
        text="We booked it — two weeks in Japan in November, Kyoto and Osaka! I've wanted to go forever.",
        reply="Oh that's amazing! What are you most excited to see?",
        question="Where are we traveling in the autumn?",
        answer="Japan (Kyoto and Osaka)",
        keys=["Japan", "Kyoto", "Osaka"],
    ),
    dict(
        category="pets",
        kind="semantic",
        text="I set up a little tank on my desk with six neon tetras. Watching them swim is weirdly calming.",
        reply="That sounds so peaceful. Desk zen!",
        question="What kind of fish do I keep?",
        answer="neon tetras",
        keys=["neon tetras"],
    ),
    dict(
        category="family",
        kind="semantic",
        text="I'm fluent in Portuguese, actually — my mom is Brazilian and we only spoke it at home.",
        reply="That's a wonderful thing to grow up with. Do you still use it much?",
        question="Which second language can I speak?",
        answer="Portuguese",
        keys=["Portuguese", "Brazilian"],
    ),
    dict(
        category="dates",
        kind="semantic",
        text="My mom's birthday is August 2nd — remind me to start planning something nice for her.",
        reply="Noted! Do you have any gift ideas yet?",
        question="When does my mother turn a year older?",
        answer="August 2",
        keys=["August 2nd"],
    ),
    dict(
        category="possessions",
        kind="entity",
        text="Someone stole my bike from outside the library — a red Trek I'd had for ten years. I'm gutted.",
        reply="Oh no, I'm so sorry. Ten years is a long time with one bike. Did you report it?",
        question="Where was the Trek taken from?",
        answer="outside the library (it was stolen)",
        keys=["Trek"],
    ),
    dict(
        category="plans",
        kind="semantic",
        text="I'm going back to school in the fall for a master's in urban planning. Just got the acceptance email!",
        reply="Congratulations!! That's a big, exciting step.",
        question="What graduate degree am I about to start?",
        answer="a master's in urban planning",
        keys=["urban planning"],
    ),
    dict(
        category="numbers",
        kind="semantic",
        text="Weekly weigh-in: down 14 pounds since January! Slow and steady.",
        reply="That's great progress, and steady is the way that sticks!",
        question="How much weight have I lost this year?",
        answer="14 pounds",
        keys=["14 pounds"],
    ),
    dict(
        category="health",
        kind="semantic",
        text="Confession: I'm red-green colorblind, so picking ripe bananas is basically guesswork for me.",
        reply="Ha, that's a very specific struggle. Squeeze test instead?",
        question="Is there something unusual about my eyesight?",
        answer="red-green colorblind",
        keys=["colorblind"],
    ),
    dict(
        category="numbers",
        kind="semantic",
        text="Just finished my 26th book of the year — my goal was 40 for the whole year, so I'm ahead!",
        reply="Way ahead of schedule! What was the last one?",
        question="How many novels have I read so far this year?",
        answer="26",
        keys=["26th book"],
    ),
]

ZH_FACTS = [
    dict(
        category="pets",
        kind="semantic",
        text="跟你说个好消息，我们把那只流浪狗领养回家啦！三岁的小土狗，傻乎乎的，我们给它起名叫豆豆。",
        reply="恭喜恭喜！家里多了个新成员，它适应得怎么样？",
        question="从救助站接回来的那个小家伙，我们管它叫啥？",
        answer="豆豆",
        keys=["豆豆"],
    ),
    dict(
        category="job",
        kind="semantic",
        text="新工作第一天结束！我现在正式在一家播客工作室当音频剪辑师了，主要负责剪访谈。",
        reply="太棒了！第一天感觉怎么样？",
        question="我如今是干哪一行的？",
        answer="播客工作室的音频剪辑师",
        keys=["音频剪辑"],
    ),
    dict(
        category="names",
        kind="semantic",
        text="哦对了，我老说“他”，忘了告诉你，我男朋友叫陈浩，我们在一起快两年了。",
        reply="好的，记住啦！两年了，真好。",
        question="我的另一半是谁？",
        answer="陈浩（男朋友）",
        keys=["陈浩"],
    ),
    dict(
        category="places",
        kind="semantic",
        text="今天下雪，突然有点想家。我是在安徽一个叫三河的小镇长大的，全镇也就几千人。",
        reply="听起来是个大家都互相认识的地方。你会经常想回去吗？",
        question="我小时候是在哪儿生活的？",
        answer="安徽的三河镇",
        keys=["三河", "安徽"],
    ),
    dict(
        category="allergies",
        kind="semantic",
        text="今天公司团建吃海鲜自助，我一口都不能碰。我对虾蟹严重过敏，吃一只虾喉咙就肿。",
        reply="听着好吓人。还好你忍住了，后来有吃别的吗？",
        question="有什么东西是我出于健康原因不能吃的？",
        answer="虾蟹等海鲜（严重过敏）",
        keys=["虾", "蟹", "海鲜"],
    ),
    dict(
        category="hobbies",
        kind="semantic",
        text="我学大提琴差不多八个月了，基本每天晚饭后练一会儿，邻居们真是很包容。",
        reply="坚持八个月很厉害了！最近在练什么曲子？",
        question="我最近在摆弄哪种乐器？",
        answer="大提琴",
        keys=["大提琴"],
    ),
    dict(
        category="family",
        kind="entity",
        text="家里有个大消息：我妹妹小雨下个月要搬去成都了！她在那边一家医院找了份护士的工作。",
        reply="这可是个大变化！她要去那么远，你心里什么感觉？",
        question="小雨最后去了哪座城市上班？",
        answer="成都（医院护士）",
        keys=["成都", "小雨"],
    ),
    dict(
        category="pets",
        kind="entity",
        text="我家猫年糕这周满十七岁了，兽医说它这个年纪身体算非常好的。",
        reply="祝它生日快乐！兽医这么说真让人放心。",
        question="年糕现在几岁了？",
        answer="十七岁",
        keys=["十七岁", "年糕"],
    ),
    dict(
        category="dates",
        kind="semantic",
        text="我生日是三月十四号——对，就是圆周率日，相关的梗我已经听了一万遍了。",
        reply="哈哈，那我就不再凑这个热闹了。有什么计划吗？",
        question="我每年哪一天又长一岁？",
        answer="三月十四日",
        keys=["三月十四"],
    ),
    dict(
        category="food",
        kind="semantic",
        text="我从大学开始吃素，算下来快九年了。到现在还老有人问我蛋白质从哪来。",
        reply="哈哈，永恒的蛋白质之问。九年真不短了！",
        question="我不碰荤腥有多少年了？",
        answer="快九年（从大学开始）",
        keys=["吃素"],
    ),
    dict(
        category="health",
        kind="semantic",
        text="验血结果出来了，医生说我缺铁缺得挺厉害，接下来三个月都得吃补铁的药。",
        reply="还好查出来了。你最近是不是也比平时容易累？",
        question="化验单显示我身体里少了什么？",
        answer="铁（缺铁）",
        keys=["缺铁", "补铁"],
    ),
    dict(
        category="names",
        kind="entity",
        text="我从幼儿园就认识的最好的朋友叫周晓婷，她现在在深圳，我们一般就打长电话。",
        reply="从那么小就认识的朋友太珍贵了，长电话也是很好的联系方式。",
        question="周晓婷这几年在哪个城市发展？",
        answer="深圳",
        keys=["深圳", "周晓婷", "幼儿园"],
    ),
    dict(
        category="food",
        kind="semantic",
        text="这周好累。现在最想吃的就是外婆做的桂花糖藕，那是我的终极安慰，什么都替代不了。",
        reply="有些味道就像一个拥抱。你知道外婆是怎么做的吗？",
        question="心情低落的时候什么吃的最能治愈我？",
        answer="外婆做的桂花糖藕",
        keys=["糖藕", "桂花"],
    ),
    dict(
        category="plans",
        kind="entity",
        text="我决定从这周一开始戒糖，给自己定了一百天的挑战，祝我好运吧。",
        reply="这可不容易，最难忍住的会是什么？",
        question="为期一百天的那个计划，我要跟什么说再见？",
        answer="糖（戒糖）",
        keys=["戒糖"],
    ),
    dict(
        category="places",
        kind="entity",
        text="我每天坐地铁去望京上班，单程差不多四十分钟，早高峰挤得要命。",
        reply="这一来一回时间可不短。平时能有座位吗？",
        question="去望京那边的公司路上得花多久？",
        answer="单程约四十分钟（地铁）",
        keys=["四十分钟", "望京"],
    ),
    dict(
        category="family",
        kind="semantic",
        text="我哥家的宝宝昨晚出生了！是个女孩，取名叫朵朵。我当姑姑啦！",
        reply="恭喜升级当姑姑！大人和宝宝都还好吗？",
        question="我侄女的名字是什么？",
        answer="朵朵",
        keys=["朵朵"],
    ),
    dict(
        category="possessions",
        kind="entity",
        text="我终于买车了！二手的白色卡罗拉，2016年的，跑了六万多公里，但开着很顺。",
        reply="恭喜有车啦！有没有计划来一趟自驾？",
        question="那辆卡罗拉买的时候里程表上是多少？",
        answer="六万多公里",
        keys=["卡罗拉", "六万"],
    ),
    dict(
        category="allergies",
        kind="semantic",
        text="提醒一下以后的我：我不能用青霉素，小时候打过一次，全身起了荨麻疹。",
        reply="记下来很重要，以后每次看病都记得跟医生说。",
        question="哪种抗生素对我来说是禁用的？",
        answer="青霉素",
        keys=["青霉素"],
    ),
    dict(
        category="jobs",
        kind="semantic",
        text="我爸今天正式退休了，他当了三十一年的邮递员，邮局还给他办了个小欢送会。",
        reply="这是个大日子！他这些年肯定走了无数的路。他心情怎么样？",
        question="我父亲在不干了之前是做什么的？",
        answer="邮递员",
        keys=["邮递员", "邮局"],
    ),
    dict(
        category="hobbies",
        kind="semantic",
        text="我收藏老式钢笔，现在大概有三十多支了。有点上头，但确实好看。",
        reply="哈哈，这是个很优雅的“坑”。有最喜欢的一支吗？",
        question="我一直在攒哪一类老物件？",
        answer="老式钢笔",
        keys=["钢笔"],
    ),
    dict(
        category="food",
        kind="semantic",
        text="和同事出去吃米线，我把每一口里的香菜都挑出来了，吃起来一股肥皂味。",
        reply="这个真的因人而异，有些人尝起来就是那个味。下次可以提前说不要放！",
        question="哪种调料菜我最受不了？",
        answer="香菜",
        keys=["香菜"],
    ),
    dict(
        category="places",
        kind="semantic",
        text="我们上周末搬到天通苑的新房子了，现在还住在一堆纸箱子里。",
        reply="搬家太累了。打算先收拾哪个房间？",
        question="我们现在的家在哪个片区？",
        answer="天通苑",
        keys=["天通苑"],
    ),
    dict(
        category="names",
        kind="semantic",
        text="我新领导姓郑，人还行，就是特别一板一眼，什么都要做成表格。",
        reply="听起来是个很讲究条理的人。你们相处得还好吗？",
        question="我现在的上司是谁？",
        answer="姓郑的新领导",
        keys=["郑"],
    ),
    dict(
        category="health",
        kind="semantic",
        text="周二去拔了智齿，这几天只能喝粥吃土豆泥。",
        reply="辛苦了，好好休息。脸还肿吗？",
        question="我最近在牙医那里处理掉了什么？",
        answer="智齿（拔了）",
        keys=["智齿"],
    ),
    dict(
        category="family",
        kind="semantic",
        text="我爸妈六月份结婚四十周年，我和我哥正在偷偷给他们准备一个惊喜派对。",
        reply="这是很美好的纪念日，惊喜派对太合适了！",
        question="我父母做夫妻多少年了？",
        answer="四十年",
        keys=["四十周年"],
    ),
    dict(
        category="numbers",
        kind="semantic",
        text="今晚算了一下，我的助学贷款还剩八万块左右没还，总算比以前少多了。",
        reply="在稳步减少就是好事，一点点还下去很了不起。",
        question="我上学时借的钱现在还欠多少？",
        answer="约八万块",
        keys=["八万块", "助学贷款"],
    ),
    dict(
        category="possessions",
        kind="semantic",
        text="我爷爷留给我一块1968年的上海牌手表，我每天都戴着。",
        reply="随身带着这样的东西，一定意义很特别。",
        question="祖父传给我的纪念物是什么？",
        answer="一块1968年的上海牌手表",
        keys=["上海牌"],
    ),
    dict(
        category="plans",
        kind="entity",
        text="我报名了十月份的北京马拉松！今天早上开放报名，我一紧张就点了提交。",
        reply="太厉害了！训练计划定好了吗？",
        question="北京那场长跑比赛是几月份？",
        answer="十月",
        keys=["马拉松"],
    ),
    dict(
        category="health",
        kind="semantic",
        text="医生确诊了：轻度哮喘。以后出门得随身带着喷雾。",
        reply="至少有了明确的答案。你自己心里怎么想？",
        question="我被查出了什么呼吸方面的病？",
        answer="轻度哮喘",
        keys=["哮喘"],
    ),
    dict(
        category="hobbies",
        kind="semantic",
        text="我最近迷上了抱石，每周和同事去市中心的攀岩馆两次。",
        reply="这个运动量很大，还能顺便社交。小臂是不是酸爆了？",
        question="我一周两回去练的是什么运动？",
        answer="抱石（室内攀岩）",
        keys=["抱石"],
    ),
    dict(
        category="family",
        kind="semantic",
        text="我奶奶上周做了髋关节置换手术，现在住在我姑姑家休养。",
        reply="希望奶奶恢复顺利，有家人在身边照顾真好。",
        question="祖母动的是什么手术？",
        answer="髋关节置换",
        keys=["髋关节"],
    ),
    dict(
        category="plans",
        kind="semantic",
        text="订好啦！十一月去日本玩两周，京都加大阪，想去好多年了。",
        reply="太棒了！最期待看什么？",
        question="我们今年秋天要去哪个国家度假？",
        answer="日本（京都和大阪）",
        keys=["日本", "京都", "大阪"],
    ),
    dict(
        category="pets",
        kind="semantic",
        text="我在桌上弄了个小缸，养了六条红绿灯，看它们游来游去特别解压。",
        reply="听起来好治愈，桌面小禅意！",
        question="我桌面上那些观赏鱼是什么品种？",
        answer="红绿灯（灯鱼）",
        keys=["红绿灯"],
    ),
    dict(
        category="family",
        kind="semantic",
        text="其实我粤语说得很流利，我妈是广州人，我们在家一直讲粤语。",
        reply="从小就有这样的语言环境真好。现在还经常说吗？",
        question="除了普通话，我还能说哪种方言？",
        answer="粤语",
        keys=["粤语", "广州"],
    ),
    dict(
        category="dates",
        kind="semantic",
        text="我妈生日是八月二号，记得提醒我早点给她准备礼物。",
        reply="记下了！有想好送什么吗？",
        question="我母亲哪天庆生？",
        answer="八月二日",
        keys=["八月二号"],
    ),
    dict(
        category="possessions",
        kind="entity",
        text="我那辆骑了十年的红色捷安特在图书馆门口被偷了，心疼死了。",
        reply="太可惜了，骑了十年的车。报警了吗？",
        question="捷安特是在什么地方丢的？",
        answer="图书馆门口（被偷）",
        keys=["捷安特"],
    ),
    dict(
        category="plans",
        kind="semantic",
        text="我秋天要回学校读研了，专业是城市规划，刚收到录取邮件！",
        reply="恭喜恭喜！这是很重要的一步。",
        question="我要去念什么方向的硕士？",
        answer="城市规划",
        keys=["城市规划"],
    ),
    dict(
        category="numbers",
        kind="semantic",
        text="每周称体重打卡：从一月到现在瘦了七公斤！慢慢来。",
        reply="进步很明显！稳稳地来最能坚持。",
        question="今年我减肥减掉了多少？",
        answer="七公斤",
        keys=["七公斤"],
    ),
    dict(
        category="health",
        kind="semantic",
        text="坦白一下：我是红绿色盲，挑香蕉熟没熟全靠猜。",
        reply="哈哈，这个烦恼好具体。要不试试捏一捏？",
        question="我的眼睛在分辨颜色上有什么问题？",
        answer="红绿色盲",
        keys=["色盲"],
    ),
    dict(
        category="numbers",
        kind="semantic",
        text="刚看完今年的第二十六本书，全年目标是四十本，我超前了！",
        reply="进度大大超前！最后看的是哪一本？",
        question="这一年我已经啃完多少本了？",
        answer="二十六本",
        keys=["第二十六本"],
    ),
]

# ---------------------------------------------------------------------------
# Filler.  ``{slot}`` is filled from ``slots``; ``{month}`` is the session's month.
# User-line markers, in this order, all optional:
#   "[w]" / "[s]" / "[u]"  winter / spring / summer (combinable): only in sessions of that season;
#   "+" / "-"              tone of the line: the assistant answers from the topic's "pos" / "neg"
#                          pool (or "neutral"); unmarked lines get a "neutral" reply;
#   "text || reply"        the line has its own assistant reply.
# "ask" topics are (user question, assistant answer) pairs.
# ---------------------------------------------------------------------------

EN = {
    "slots": {
        "weekday": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
        "meeting_hour": ["8", "8:30", "9", "9:30", "10"],
        "wake_hour": ["3", "3:30", "4", "4:30", "5"],
        "nap_hour": ["4", "5", "6", "six-thirty"],
        "late_hour": ["9", "10", "10:30", "11"],
        "coworker": [
            "Greg",
            "Linda",
            "Omar",
            "Steph",
            "Kevin",
            "Rachel",
            "Paul",
            "Yuki",
            "Dan",
            "Maria",
            "Tasha",
            "Ian",
        ],
        "friend": [
            "Jess",
            "Tom",
            "Alicia",
            "Ben",
            "Carla",
            "Dev",
            "Nora",
            "Sam",
            "Olivia",
            "Raj",
            "Mia",
            "Luis",
            "Kate",
            "Theo",
            "Grace",
            "Zoe",
        ],
        "baked": [
            "banana bread",
            "cinnamon rolls",
            "brownies",
            "lemon bars",
            "donuts",
            "blueberry muffins",
            "scones",
        ],
        "dish": [
            "pasta",
            "veggie curry",
            "mushroom risotto",
            "crispy tofu",
            "lentil soup",
            "shakshuka",
            "veggie chili",
            "fried rice",
            "black bean tacos",
            "roasted vegetables",
            "potato soup",
            "pesto gnocchi",
            "stuffed peppers",
        ],
        "cuisine": ["Thai", "Ethiopian", "Korean", "Lebanese", "Mexican", "Indian", "Vietnamese", "Georgian"],
        "rdish": [
            "noodles",
            "falafel wrap",
            "curry",
            "flatbread",
            "bibimbap",
            "dosa",
            "veggie burrito",
            "khachapuri",
        ],
        "snack": [
            "fries",
            "ice cream",
            "popcorn",
            "a giant pretzel",
            "nachos",
            "chocolate",
            "gummy bears",
            "salt and vinegar chips",
        ],
        "show": [
            "Severance",
            "The Bear",
            "Ted Lasso",
            "Abbott Elementary",
            "Only Murders in the Building",
            "The Great British Baking Show",
            "Slow Horses",
            "Shrinking",
            "Parks and Rec",
            "The Office",
            "Schitt's Creek",
        ],
        "mood": ["funny", "scary", "cozy", "mind-bending", "feel-good", "gripping", "a little sad"],
        "bookgenre": ["mystery", "sci-fi", "fantasy", "historical", "thriller", "romance"],
        "podtopic": [
            "ancient history",
            "true crime",
            "the deep ocean",
            "economics",
            "psychology",
            "space",
            "urban legends",
            "old shipwrecks",
        ],
        "number": ["47", "112", "238", "63", "89", "300", "154"],
        "steps": ["12", "15", "18", "20", "22"],
        "place": [
            "the botanical garden",
            "the flea market",
            "the beach",
            "the art museum",
            "the lake",
            "the farmers market",
            "that new bookstore",
        ],
        "worry": [
            "a presentation I have to give",
            "a doctor's appointment",
            "my rent going up",
            "a hard conversation with a friend",
            "my performance review",
            "an email I sent with a typo",
        ],
        "chore": [
            "my taxes",
            "the pile of mail",
            "cleaning out the fridge",
            "returning that package",
            "the laundry mountain",
            "booking a haircut",
            "fixing the wobbly shelf",
        ],
        "gadget": [
            "air fryer",
            "smart speaker",
            "robot vacuum",
            "electric toothbrush",
            "tablet",
            "pair of headphones",
            "label maker",
        ],
        "destination": [
            "Mexico City",
            "Iceland",
            "Italy",
            "Greece",
            "Morocco",
            "Vancouver",
            "Scotland",
            "Peru",
            "Costa Rica",
        ],
        "city": ["Denver", "Atlanta", "Boston", "Phoenix", "Seattle", "Dallas", "Minneapolis"],
        "lang": ["Spanish", "French", "German", "Italian", "Korean"],
        "ingredient": [
            "eggs",
            "chickpeas",
            "spinach",
            "tofu",
            "potatoes",
            "a can of black beans",
            "leftover rice",
            "zucchini",
        ],
        "weather": ["gray and drizzly", "windy", "foggy", "rainy", "cloudy", "dreary"],
        "relative": ["my aunt", "my uncle", "my cousin", "my mom", "my dad", "my brother"],
    },
    "openers": [
        "So. ",
        "Random update: ",
        "Okay. ",
        "Quick one: ",
        "Hey, so. ",
        "Small thing, but: ",
        "Not much going on, but here's my day: ",
        "Well. ",
        "Update from my couch: ",
        "Okay, so, today. ",
        "Story time: ",
        "Today in my life: ",
    ],
    "openers_neg": ["Ugh. ", "Sigh. ", "Okay, small rant: ", "Not my day. "],
    "ask_openers": [
        "Random question: ",
        "Quick question. ",
        "Okay, question for you. ",
        "Can I ask you something? ",
        "Hmm. ",
    ],
    "tails": [
        " Anyway.",
        " How's your day?",
        " Just needed to tell someone.",
        " Is that weird?",
        " Lol.",
        " Kind of funny in hindsight.",
        " That's my life right now.",
        " Anyway, that's been my day so far.",
        " Not a big deal, just felt like sharing.",
        " I don't know why I'm telling you this, but here we are.",
        " Thought you'd appreciate that.",
        " So that's where I'm at.",
    ],
    "tails_neg": [
        " Typical.",
        " Not complaining, just saying.",
        " Whatever, it's fine.",
        " Why is it always me?",
        " Could be worse, I guess.",
        " Some days, honestly.",
    ],
    "generic": {
        "neutral": [
            "Mm, I hear you.",
            "Thanks for telling me. How do you feel about it?",
            "That's fair.",
            "Makes sense to me.",
            "Honestly, that sounds about right.",
            "Sounds like quite a day!",
            "Tell me more?",
            "Ha, I see.",
        ],
        "pos": ["Ha, I love that.", "That's great!", "Nice, that made me smile.", "Good for you!"],
        "neg": [
            "Oof. Hang in there.",
            "That sounds like a lot. How are you holding up?",
            "Ugh, that's annoying.",
            "Oh no, haha. Classic.",
            "I get that. Want to talk more about it?",
        ],
    },
    "greetings": {
        "morning": [
            "Morning! Coffee in hand.",
            "Good morning. Up early for once.",
            "Morning. Still waking up.",
            "Hi! Quick chat before work?",
        ],
        "lunch": [
            "Hey! Lunch break, figured I'd say hi.",
            "Hi, eating a sad desk salad and wanted company.",
            "Quick hello from my lunch break.",
        ],
        "evening": [
            "Hey, I'm back.",
            "Hi! Long time no chat.",
            "Evening. Got a minute?",
            "Hey, it's me again.",
            "Hello hello.",
            "Home at last. Hi.",
            "Okay, finally sitting down. Hi!",
            "Hey you. What a day.",
        ],
        "late": [
            "Can't sleep, so here I am.",
            "Hi. It's late, I know.",
            "Still up. Talk to me?",
            "Late-night check-in.",
        ],
    },
    "greeting_replies": [
        "Hey! Good to see you. How's it going?",
        "Hi! What's on your mind today?",
        "Welcome back! How has your day been?",
        "Hi there! Always happy to chat.",
        "Hey! Tell me everything.",
        "Hello! How are you doing?",
    ],
    "closers": [
        "Okay, I should sleep. Thanks for listening.",
        "Gotta run, talk later!",
        "Alright, back to work. Bye!",
        "That's all for tonight. Night!",
        "Thanks, this helped. Catch you later.",
        "Okay, dinner's ready, bye!",
        "Going to try to be productive now. Wish me luck.",
        "Alright, bedtime for real.",
    ],
    "closer_replies": [
        "Sleep well!",
        "Talk soon! Take care.",
        "Good luck with the rest of your day!",
        "Anytime. Goodnight!",
        "Bye for now!",
        "Take care of yourself!",
    ],
    "topics": {
        "work": {
            "weight": 10,
            "user": [
                "-Work was a lot today. Back-to-back meetings from {meeting_hour} until lunch.",
                "-My coworker {coworker} replied-all to the whole company again. I can't.",
                "-I have a deadline on {weekday} and I've barely started. Send help.",
                "-Spent half the day fixing a spreadsheet someone else broke.",
                "-We had a team lunch today, which was nice, but now I'm behind on everything.",
                "-Honestly I think I'm just tired of staring at a screen all day.",
                "+{coworker} brought {baked} into the office, which saved my afternoon.",
                "-The wifi at work went down for two hours and everyone just kind of wandered around.",
                "+Got some really nice feedback on a project today. Felt good for once.",
                "-Performance reviews are coming up and I'm weirdly anxious about it.",
                "-I accidentally stayed muted for an entire presentation. Nobody told me.",
                "-Our planning meeting ran an hour over. An entire hour!",
                "I'm trying to get better at saying no to extra stuff at work. || That's a really healthy skill to build. It gets easier with practice.",
                "-Had a super productive morning and then completely crashed after lunch.",
                "-{coworker} is leaving the team and I'm kind of bummed, we got along well.",
                "+Worked from home today and never changed out of my sweatpants. No regrets.",
                "-I've got {number} unread emails and I'm choosing to ignore them until tomorrow.",
                "-My calendar on {weekday} is a wall of meetings. When am I supposed to actually work?",
                "-Somebody microwaved fish in the office kitchen again and the whole floor smells.",
                "-My boss moved our one-on-one for the third time this week.",
                "-I stayed late to finish something and the building was so quiet it was eerie.",
                "Two people on my team are arguing over a font and I'm staying far away from it. || Ha, staying out of the font wars is very wise.",
                "+{coworker} and I finally fixed the bug that's been haunting us for a week!",
                "-The new project management tool at work is so confusing, nobody knows where anything is.",
                "-I had to give a demo today and my laptop decided to update right before it.",
                "{coworker} just got promoted to team lead, which is great, but now our whole meeting schedule is changing. || Good news for them, even if the schedule shuffle is annoying.",
                "Our team is hiring two new people next month, so I've been sitting in on a lot of interviews lately. || That's a lot of extra time. Has anyone stood out?",
            ],
            "neutral": [
                "Ha, office life is something else.",
                "How are you feeling about it all?",
                "Work never gets boring, huh?",
            ],
            "pos": [
                "Nice! It's good to hear when work goes right.",
                "That's a great feeling. Celebrate the small wins!",
                "Ha, love that.",
                "Honestly, days like that are underrated.",
            ],
            "neg": [
                "That sounds draining. Did you get any time to yourself after?",
                "Oof, that's rough.",
                "That's frustrating. Hopefully tomorrow is calmer.",
                "Sounds like you earned a slow evening.",
                "Work days like that wear anyone down.",
                "Ugh. Was the rest of the day any better?",
            ],
        },
        "weather": {
            "weight": 6,
            "user": [
                "-It's {weather} here again today. I'm so over it.",
                "[ws]+Finally a sunny day! I ate lunch outside for the first time in ages.",
                "-The wind this morning was so strong my umbrella flipped inside out.",
                "[w]It snowed overnight and everything looks like a postcard, but the sidewalks are a mess. || Snow days are so pretty, just not to walk in. Careful out there!",
                "[ws]It's weirdly warm for {month}, people are out in shorts. || Ha, the first warm day always brings out the shorts crowd.",
                "-Got caught in the rain on the way home. Completely soaked.",
                "-The forecast said sunny and it has been pouring all afternoon. Classic.",
                "[su]-It's so humid my hair has officially given up.",
                "Woke up to fog so thick I couldn't see the building across the street. || Foggy mornings are eerie and kind of beautiful at the same time.",
                "[su]-There was a thunderstorm last night and I barely slept.",
                "It's one of those gray days where you just want to stay under a blanket. || Blanket days are allowed. Any plans to make it cozy?",
                "+Perfect weather for a walk today, so I actually took one.",
                "[w]-The heat in our building is cranked up so high it feels like a sauna.",
                "[s]-Pollen season has started and my eyes have been itchy all day.",
                "[w]-It was so cold this morning my eyelashes felt crunchy.",
                "[u]-It's going to be ninety-something degrees this weekend. I'm melting already.",
                "[s]+The trees on my street are all blooming at once, it's ridiculous and I love it.",
                "[u]The sun doesn't set until almost nine now, it messes with my sense of time. || Long summer evenings really do throw off your internal clock. Nice for walks, though!",
                "[w]-It gets dark at like five and my brain thinks it's midnight.",
            ],
            "neutral": [
                "Weather really does affect the mood, doesn't it?",
                "Ha, the weather really has a sense of humor sometimes.",
            ],
            "pos": [
                "That sounds lovely. Days like that are worth soaking up.",
                "Enjoy it while it lasts!",
                "Love that for you.",
            ],
            "neg": [
                "Ugh, that sounds miserable.",
                "Hopefully it gets better soon.",
                "Hang in there. Weather like that wears everyone down.",
                "Oof. Take it easy today.",
            ],
        },
        "food": {
            "weight": 9,
            "user": [
                "+I made {dish} for dinner and honestly it came out great.",
                "I'm trying to cook more at home instead of ordering in every night. || Cooking at home is such a good habit. What are you making next?",
                "+Tried a new {cuisine} place near my building, the {rdish} was amazing.",
                "I had cereal for dinner. Don't judge me. || No judgment, cereal dinners are a time-honored tradition.",
                "-Meal prepped for the whole week on Sunday and I already regret the amount of {dish}.",
                "I've been craving {snack} all day for no reason. || Sometimes the craving just wins. Are you going to get some?",
                "-I burned the rice. How do you burn rice? I don't know, but I did.",
                "+My friend {friend} taught me a trick for making {dish} and it changed everything.",
                "[su]+The farmers market had the best peaches today, I bought way too many.",
                "Ordered takeout again, the third time this week. Oops. || Hey, some weeks are takeout weeks. No shame.",
                "+Baked {baked} for the first time. Looks ugly, tastes good.",
                "+I'm on a soup kick lately. Lentil, tomato, whatever I can find.",
                "+Had brunch with {friend}, the pancakes were the size of my face.",
                "-I keep buying fresh herbs and letting them wilt in the fridge.",
                "+Trying to drink more water and less coffee. Day three, going okay.",
                "-My coffee maker broke this morning so I had to go to a café like an animal.",
                "Made a huge pot of {dish} and I'll be eating it until {weekday}. || Sounds like a good week for leftovers at least.",
                "-I tried to make bread from scratch and it came out like a brick.",
                "-Grocery run done. I somehow spent twice what I planned and have nothing for dinner.",
                "+There's a food truck outside work that does incredible {rdish}, I'm a regular now.",
                "+I've been putting hot sauce on everything lately. Everything.",
                "+Ate an entire bag of {snack} while watching TV and I feel no shame.",
            ],
            "neutral": [
                "Ha, food is always a good topic.",
                "What are you thinking of making next?",
            ],
            "pos": [
                "That sounds delicious!",
                "Yum. That sounds like a great meal.",
                "Oh nice, I love that.",
                "Honestly that sounds perfect.",
            ],
            "neg": [
                "Ha, we've all been there.",
                "Kitchen fails happen to everyone.",
                "Ugh, that's annoying.",
                "Hopefully tomorrow's food luck is better.",
            ],
        },
        "media": {
            "weight": 8,
            "user": [
                "Started watching {show} last night and now it's 2am and I've seen five episodes. || Ha, that's the sign of a good show. How far in are you now?",
                "Finally finished {show}. The ending was... a choice. || Ha, endings are hard. Did it at least make sense?",
                "Any good movie suggestions? I want something {mood} tonight. || Tell me a movie you loved recently and I'll suggest something in the same spirit.",
                "+I've been listening to a podcast about {podtopic} on the way to work, it's great.",
                "+Rewatching {show} for the third time. It's my comfort show.",
                "-Went to the movies with {friend} and the guy next to us narrated the entire plot.",
                "+I'm halfway through a {bookgenre} novel and I can't put it down.",
                "Everyone keeps spoiling {show} for me online, I need to catch up. || Spoilers are the worst. Maybe mute a few keywords for a while?",
                "I fell asleep twenty minutes into the movie, as usual. || Ha, movie naps are a genre of their own.",
                "+Watched a documentary about {podtopic} and I can't stop thinking about it.",
                "+My playlist this week has been nothing but 2000s pop.",
                "Is it weird that I like video game soundtracks more than most albums? || Not weird at all! A lot of game music is made to be great background listening.",
                "Started a 1,000-piece puzzle while watching {show}. What was I thinking. || Ambitious! Puzzles and TV are a cozy combo though.",
                "+Went to a live comedy show with {friend}, I laughed so hard I cried.",
                "I tried to start a new series but ended up rewatching {show} instead. || Ha, comfort shows always win.",
                "+The library hold I placed months ago finally came in, a {bookgenre} one everyone's talking about.",
                "+Saw a concert in the park, a local band, and it was so much better than expected.",
            ],
            "neutral": [
                "Ooh, tell me more about it.",
                "Would you recommend it?",
            ],
            "pos": [
                "That sounds fun!",
                "Oh, I love that.",
                "The best kind of night, honestly.",
                "That sounds like a great find.",
            ],
            "neg": [
                "Ugh, that's the worst.",
                "Ha, there's always one person like that.",
            ],
        },
        "sleep": {
            "weight": 6,
            "user": [
                "-I slept terribly last night, kept waking up at {wake_hour}.",
                "-I'm trying to go to bed before midnight this week. Day one: failed.",
                "-Took a nap at {nap_hour} and now I'm wide awake. Classic mistake.",
                "I had the weirdest dream that I was late for an exam in a class I never took. || Dreams like that are so common, usually just stress leaking through.",
                "+Actually got eight hours last night and I feel like a new person.",
                "-The neighbors upstairs were moving furniture at 1am. Why.",
                "-I've been scrolling on my phone in bed way too much, I know it's bad.",
                "Trying a no-screens-after-{late_hour} rule. We'll see how long that lasts. || Good experiment! Even a few nights can make a difference.",
                "-My sleep schedule is completely wrecked after the weekend.",
                "+Woke up before my alarm for once and didn't know what to do with myself.",
                "-I keep waking up at {wake_hour} thinking about embarrassing things from years ago.",
                "+Bought a new pillow and I swear it's changed my life.",
                "I dreamed my teeth were falling out again. Why is that such a common one? || It's one of the most common dreams there is. It often shows up when you're stressed.",
                "-I hit snooze five times this morning and still felt like a zombie.",
            ],
            "neutral": [
                "Sleep is such a tricky thing.",
            ],
            "pos": [
                "Love that! Good sleep changes everything.",
                "That's a win worth celebrating.",
            ],
            "neg": [
                "Rough night. Anything on your mind keeping you up?",
                "Oof. I hope tonight is more restful.",
                "That's exhausting. Maybe an early night tonight?",
                "Ugh, broken sleep is the worst.",
            ],
        },
        "weekend": {
            "weight": 7,
            "user": [
                "Any plans for the weekend? I have literally nothing scheduled and I love it. || A totally free weekend sounds perfect. Enjoy the nothing!",
                "-Spent Saturday cleaning the whole place, now I need another weekend to recover.",
                "+Went on a little hike with {friend} on Sunday, my legs are still sore.",
                "-This weekend was way too short.",
                "I'm thinking of going to {place} on Saturday if the weather holds. || That sounds like a nice plan. Fingers crossed for good weather!",
                "We had a game night and it got way too competitive over Monopoly. || Ha, Monopoly ruins friendships. Who won?",
                "+I did absolutely nothing on Sunday and it was perfect.",
                "Helped {friend} move this weekend. Never again. (I'll definitely do it again.) || That's a good friend move. Hope your back survived!",
                "+There's a street fair in the neighborhood this weekend, might check it out.",
                "Went thrift shopping and found a lamp shaped like a mushroom. Obviously I bought it. || A mushroom lamp sounds amazing, honestly.",
                "+Spent the whole weekend on the couch with a blanket and snacks.",
                "+Went to {place} with {friend} on Saturday, it was so nice to get out.",
                "+I slept until eleven on Saturday and I regret nothing.",
                "-We tried a new brunch spot on Sunday and waited an hour for a table.",
                "Long weekend coming up and I have zero plans. Should I make some? || Maybe one small plan, like a walk or a nice meal, and leave the rest open?",
                "+We drove out to a little lake town on Saturday, the kind of place with one diner and a bait shop, and it was perfect.",
            ],
            "neutral": [
                "Weekends go by so fast.",
            ],
            "pos": [
                "Sounds like a lovely way to spend the weekend.",
                "That sounds great!",
                "Love that.",
                "Rest is a perfectly good plan.",
            ],
            "neg": [
                "Ugh, weekends are never long enough.",
                "That's a lot of effort for a day off!",
                "Oof, sounds tiring.",
            ],
        },
        "feelings": {
            "weight": 7,
            "user": [
                "I'm feeling kind of flat today. Nothing's wrong exactly, just meh. || Meh days happen. Want to talk about it or just be distracted?",
                "Honestly I'm in a really good mood today and I don't know why. || I'm glad you're having a good day! Enjoy it.",
                "I've been feeling a bit lonely lately. Everyone seems so busy. || That sounds really hard. I'm here if you want to talk. Is there someone you could see this week?",
                "-I'm anxious about {worry}, even though I know it's probably fine.",
                "-I had one of those days where everything felt a little too loud.",
                "Feeling proud of myself: I finally dealt with {chore}, which I'd been avoiding for weeks. || That's worth being proud of. Small wins add up.",
                "-I'm kind of overwhelmed, too many small things piling up.",
                "Can I just vent for a sec? Today was annoying in a hundred tiny ways. || Of course, vent away. What happened?",
                "+I've been trying to journal again. It actually helps.",
                "I snapped at {friend} earlier over nothing and now I feel bad. || Maybe reach out and clear the air? They'll probably understand.",
                "[ws]+Noticed the days are getting longer and it made me weirdly happy.",
                "-I feel like I'm always busy but never actually getting anything done.",
                "Today was just... nice. No drama. I'll take it. || Quiet, nice days are underrated.",
                "Sometimes I wonder if I'm doing enough with my life, you know? || That's a really human feeling. For what it's worth, you seem to be handling a lot.",
                "-I've been comparing myself to people online again and it's not great.",
            ],
            "neutral": [
                "Thanks for sharing that with me.",
            ],
            "pos": [
                "That's lovely to hear.",
                "Good! Hold on to that feeling.",
            ],
            "neg": [
                "That sounds hard. Be gentle with yourself.",
                "I'm sorry. Want to talk it through?",
                "That's a lot to carry. I'm here.",
            ],
        },
        "exercise": {
            "weight": 6,
            "user": [
                "Went for a run this morning. Only made it two miles, but that counts. || That counts! Nice job getting out there.",
                "I tried a yoga class and I am apparently not flexible at all. || Flexibility comes with time. How did it feel afterward?",
                "My legs are so sore from {weekday}'s workout I can barely do stairs. || Ha, the stairs after leg day are brutal.",
                "+Thinking about getting back into swimming, the pool near me reopened.",
                "Skipped the gym again. Tomorrow. For real this time. || Tomorrow it is! No guilt.",
                "+I've been doing ten minutes of stretching before bed and my back feels better.",
                "{friend} wants me to join a pickleball league. Should I? || Sounds fun! You could try one session and see how you like it.",
                "+Walked {steps} thousand steps today without even trying.",
                "[su]+Biked along the river today, it was gorgeous.",
                "Watched a rock climbing documentary and my palms were sweating the whole time. || Those films are so intense, even just watching.",
                "-Tried a spin class and the instructor yelled at us like a drill sergeant.",
                "+I've been doing push-ups every morning. Up to fifteen!",
                "The park near me has an outdoor gym now and it's always full of old men doing pull-ups. || Ha, those guys are the real athletes of the park.",
                "-Did a free online workout video and the lady kept saying 'almost done' for ten minutes.",
            ],
            "neutral": [
                "Moving your body in any way counts.",
            ],
            "pos": [
                "Nice work!",
                "Consistency beats intensity. Keep it up!",
                "That sounds great.",
            ],
            "neg": [
                "Ha, that sounds brutal.",
                "Oof. Take it easy on yourself.",
            ],
        },
        "family": {
            "weight": 9,
            "user": [
                "My sister sent me about forty photos of her new haircut asking which angle is best. || Ha, the important questions. Which angle won?",
                "+Talked to my sister on the phone for two hours last night about absolutely nothing.",
                "-My brother still hasn't returned the drill he borrowed back in the fall.",
                "Mom called to ask if I'm eating enough vegetables. Some things never change. || Some things never change. It's kind of comforting though.",
                "My dad discovered voice messages and now sends me three-minute ones about the weather. || Sounds like a very dad thing to do.",
                "My cousin is getting married next year and the family group chat is chaos. || Ha, wedding group chats are a special kind of chaos.",
                "+Grandma mailed me a card for no reason, just to say hi. It made my week.",
                "My parents are redoing their kitchen and arguing about tiles. || Ha, tile debates can get surprisingly intense.",
                "My brother and I got into a silly argument about the rules of a board game from when we were kids. || Childhood rules are sacred. Who was right?",
                "I miss Sunday family dinners, we don't really do them anymore. || Maybe suggest bringing them back, even once a month?",
                "-My aunt keeps asking when I'm going to settle down. Every. Single. Time.",
                "+My sister and I watched the same show 'together' over video call, it was fun.",
                "Dad sent a photo of a tomato he grew. Just one tomato. He's very proud. || Aw, one tomato is still a harvest! He should be proud.",
                "My grandpa used to take me fishing when I was little. I was thinking about that today. || That's a lovely memory to hold on to.",
                "-Mom wants everyone to do a family photo shoot this summer. Help.",
                "-My sister borrowed my good coat and returned it with a mystery stain.",
                "{relative} sent me a very long article about vitamins with no context. || Ha, the classic no-context family forward.",
                "-Family group chat is arguing about where to have the next holiday dinner already.",
                "+My brother got a new puppy and now every text from him is puppy photos.",
                "+Called my grandma and she told me the same story three times, but I didn't mind.",
                "My sister is thinking about getting a tattoo and wants my opinion on designs. || Fun! Does she have a favorite design so far?",
                "My cousin just started a new job as a paralegal downtown, and she already hates the commute. || New job plus a bad commute is a tough combo. Hopefully it gets easier for her.",
                "My brother and his wife are thinking about moving closer to her parents, maybe next spring. Nothing's decided yet. || Big decision. Would that put them closer to you or farther away?",
                "My aunt had knee surgery a couple of years ago and she's still telling everyone about her physical therapist. || Ha, sounds like that physical therapist made quite an impression.",
                "My dad keeps talking about buying an RV when he has more free time, and my mom keeps pretending not to hear. || Ha, a classic standoff. Who do you think will win?",
            ],
            "neutral": [
                "Families, right? Lovable and exhausting.",
                "Ha, family life.",
            ],
            "pos": [
                "Aw, that's really sweet.",
                "That's lovely. It sounds like you're close.",
            ],
            "neg": [
                "Ugh, family can be a lot sometimes.",
                "Ha, that's frustrating. Have you said anything?",
            ],
        },
        "pets": {
            "weight": 8,
            "user": [
                "The dog refused to go out in the rain this morning, just sat at the door judging me.",
                "The cat has decided my keyboard is her bed now.",
                "My neighbor's dog barks every time the mail comes, like clockwork.",
                "{friend}'s cat had kittens and they're trying to find homes for all of them. I'm tempted. || Kittens are hard to resist! Are you seriously considering it?",
                "Watched way too many cat videos instead of working today.",
                "Do you think dogs dream? He twitches and paddles his paws in his sleep. || They probably do! Dogs go through sleep stages a lot like ours, so the paw paddling may be dream running.",
                "+Took the dog to the park and he made friends with a very large poodle.",
                "The cat knocked a glass off the counter while looking me dead in the eye.",
                "-Pet food prices are getting ridiculous.",
                "Found cat hair in my coffee. I don't even know how.",
                "There's a squirrel outside the window that has become the cat's sworn enemy.",
                "The dog ate part of a sock and I spent the evening panicking. He's fine. || Glad he's okay! That's such a scary moment.",
                "+Someone at the park asked to pet the dog and he flopped over for belly rubs immediately.",
                "-The cat woke me up at 5am by sitting on my face. Love that for me.",
                "+My coworker brought her dog to the office and nobody got any work done.",
                "Spent way too long at the pet store picking out a toy the dog destroyed in five minutes.",
                "My neighbor has a huge old Newfoundland that sleeps across the entire hallway and won't move for anyone. || Ha, a gentle giant who knows exactly what he wants.",
            ],
            "neutral": [
                "Ha, pets really know how to make a statement.",
                "Animals have such personalities.",
                "Ha, that's adorable.",
                "Pets are a whole comedy show.",
            ],
            "pos": [
                "That's adorable!",
                "Honestly that sounds like the best part of the day.",
            ],
            "neg": [
                "Oh no, haha.",
                "Ugh, that's annoying.",
            ],
        },
        "travel": {
            "weight": 6,
            "user": [
                "I'm daydreaming about a beach vacation. Somewhere with no email. || Sounds like you need a getaway! Where's top of the list?",
                "{friend} just got back from {destination} and the photos are making me jealous. || Photos like that are dangerous. Would you want to go there too?",
                "-I have to go on a work trip to {city} next month, two days of meetings.",
                "Any tips for packing light? I always bring way too much. || Roll your clothes to save space, and limit yourself to one extra pair of shoes.",
                "-Flights are so expensive right now, it's discouraging.",
                "I want to do a road trip this summer but I have no idea where. || Road trips are great. Are you thinking mountains, coast, or small towns?",
                "My passport expires soon, I should renew it before I need it. || Good call. Renewals can take a while, so better early.",
                "Honestly my favorite part of traveling is the airport snacks. || Airport snacks are a legitimate travel highlight.",
                "{coworker} went to {destination} for a week and came back so relaxed. Jealous.",
                "+I've been looking at cabins in the mountains for a long weekend.",
                "My flight home from {city} got delayed four hours. Airports are purgatory. || Ugh, delays are the worst. Hope you had a good book.",
                "+Saw a documentary about {destination} and now it's on my list.",
                "I always overplan trips and then end up doing nothing on the list.",
                "{friend} spent two weeks backpacking through Vietnam and came back with about four thousand photos. || Four thousand! Did you get the full slideshow?",
            ],
            "neutral": [
                "Travel daydreams are half the fun.",
                "Sometimes planning is half the fun.",
            ],
            "pos": [
                "That sounds dreamy!",
            ],
            "neg": [
                "Ugh, that's frustrating.",
                "Travel can be exhausting. Any chance for a fun dinner while you're there?",
            ],
        },
        "health": {
            "weight": 7,
            "user": [
                "-I think I'm coming down with a cold, my throat is scratchy.",
                "Had a dental cleaning today. No cavities! Small victories. || No cavities is a real win.",
                "I've had a headache all afternoon, probably not enough water. || Headaches from dehydration are sneaky. Maybe grab a big glass of water?",
                "-My back hurts from sitting in a bad chair all day.",
                "[w]Got my flu shot today, my arm is a bit sore. || Good for you for getting it done!",
                "[s]-Seasonal allergies are hitting hard, I've sneezed about forty times today.",
                "-I've been trying to cut back on caffeine and the headaches are real.",
                "Finally booked an eye exam, I've been squinting at screens for months. || Good call. Screens are rough on the eyes.",
                "Annual checkup next week. I always get nervous before those for no reason. || Checkups are nerve-wracking even when everything's fine.",
                "-Stubbed my toe on the bed frame this morning and said some words.",
                "-I pulled something in my shoulder reaching for a box on a high shelf.",
                "-Got winded going up the stairs at the train station. I'm so out of shape.",
                "I've had hiccups for twenty minutes, please make it stop. || Try sipping water slowly or holding your breath for a bit. Good luck!",
                "-My neck is stiff from sleeping weird. I can only look left.",
                "-Pharmacy line was forty people long today. I just wanted cough drops.",
                "My coworker found out she's allergic to cats after years of owning one, which feels like a cruel joke. || Oof, that's rough. Is she keeping the cat?",
                "My mom started a new blood pressure medication and says it makes her dizzy in the mornings. || That's worth mentioning to her doctor. Sometimes the timing or dose can be adjusted.",
            ],
            "neutral": [
                "Take care of yourself.",
            ],
            "pos": [
                "Good for you!",
            ],
            "neg": [
                "Feel better soon! Rest and fluids.",
                "Ouch! Take it easy for a few days.",
                "Ugh, that sounds uncomfortable.",
                "Oof. Be gentle with yourself today.",
            ],
        },
        "money": {
            "weight": 5,
            "user": [
                "I'm trying to stick to a budget this month and it's going... okay. || Budgets are hard, but sticking to it even partly counts.",
                "I bought a new {gadget} and I'm already wondering if I needed it. || Ha, classic buyer's doubt. Have you used it yet?",
                "-Why is everything so expensive at the grocery store lately?",
                "+Finally cancelled three subscriptions I wasn't even using.",
                "+I returned a jacket today that I'd been meaning to return for six weeks.",
                "+Impulse bought some plants. My apartment is becoming a jungle.",
                "My rent is going up and I'm a little stressed about it. || Rent hikes are stressful. Is it a big jump?",
                "+Found twenty dollars in an old coat pocket. Best day.",
                "Trying to save up for a new laptop, mine sounds like a jet engine.",
                "-I made a spreadsheet of my spending and I'm scared to look at it.",
                "Online shopping at midnight should be illegal. Three packages are on the way. || Midnight shopping is a dangerous game.",
                "+Got a small refund I forgot about. Treating myself to a nice dinner.",
            ],
            "neutral": [
                "Money stuff is always a bit of a puzzle.",
            ],
            "pos": [
                "Ha, that's a fun win!",
                "Nice, that's satisfying.",
            ],
            "neg": [
                "Ugh, everything costs so much lately.",
                "That's stressful. One step at a time.",
            ],
        },
        "home": {
            "weight": 6,
            "user": [
                "Did three loads of laundry and I still have nothing to wear, somehow. || Laundry really is an endless cycle.",
                "-The kitchen sink is leaking and the landlord says he'll 'get to it'.",
                "+I rearranged the living room and it feels like a whole new place.",
                "There's a pile of dishes in the sink that's judging me right now. || Ha, the dishes can wait five more minutes.",
                "Bought a new plant. Already worried I'll kill it. || What kind? Some are pretty hard to kill.",
                "Vacuumed under the couch and found so many hair ties.",
                "-Someone in my building is learning the trumpet. Every evening. At seven.",
                "Spent an hour organizing my closet and then got distracted by old photos.",
                "-The smoke detector started chirping at 3am. Worst sound in the world.",
                "+Finally hung up the pictures that have been leaning against the wall for months.",
                "+I deep-cleaned the bathroom and now I feel like a responsible adult.",
                "-The washing machine in our building is broken again, so it's laundromat time.",
                "I assembled a bookshelf by myself and only have two screws left over. That's fine, right? || Two leftover screws is practically a tradition. If it doesn't wobble, it's fine!",
                "I keep saying I'll learn to knit, but so far I own a lot of yarn and zero scarves. || Ha, the yarn stash counts as a first step.",
            ],
            "neutral": [
                "Ha, home life.",
                "The little chores never end.",
            ],
            "pos": [
                "That's a satisfying job to finish!",
                "Nice! That always feels good.",
            ],
            "neg": [
                "Ugh, that's annoying. Hope it gets sorted soon.",
                "Oof, that sounds frustrating.",
            ],
        },
        "friends": {
            "weight": 6,
            "user": [
                "+Had dinner with {friend} and we talked until the restaurant closed.",
                "-{friend} cancelled plans last minute again. Kind of annoyed.",
                "Went to a party where I knew basically nobody. Awkward. || Parties with strangers are tough. Did you meet anyone nice?",
                "+Caught up with an old college friend on the phone, it was really nice.",
                "My friends and I started a book club. We'll see if anyone actually reads. || Ha, the eternal book club question. What's the first pick?",
                "{friend} is going through a breakup, I'm going over with ice cream later. || That's so kind of you. Ice cream is the correct move.",
                "-I'm terrible at replying to texts. I have like twelve I haven't answered.",
                "-Someone at a party asked what I do and my mind went completely blank.",
                "{friend} and I took a pottery class. My bowl looks like a hat. || Ha, a hat-bowl is still a functional object!",
                "Went to {friend}'s birthday karaoke and I'm never living down my song choice.",
                "{friend} and I have been friends for years and we still can't agree on a restaurant.",
                "-The group chat planned a trip and I'm the only one who actually booked anything.",
                "{friend} just moved to Denver for a teaching job and keeps sending me photos of the mountains. || That sounds like a great move. Are you tempted to visit?",
                "{friend} finally adopted a cat from the shelter, a grumpy orange one named after a cheese. || Ha, orange cats are their own kind of chaos. Which cheese?",
                "{friend} has been taking piano lessons for a year and just played a first little recital. I went to watch. || That's so sweet that you went. How did it go?",
            ],
            "neutral": [
                "Friends keep life interesting.",
                "Ha, that sounds about right.",
            ],
            "pos": [
                "Those are the best kinds of nights.",
                "That sounds really nice.",
            ],
            "neg": [
                "That's frustrating, especially when it keeps happening.",
                "Ugh, awkward. That happens to everyone though.",
            ],
        },
        "commute": {
            "weight": 5,
            "user": [
                "-The train was delayed twenty minutes this morning with zero explanation.",
                "-Someone on the bus was playing music out loud at full volume.",
                "-There's construction right outside my building. Jackhammer at 7am.",
                "-Traffic was so bad today I could have walked faster.",
                "A new bakery opened on my street and the whole block smells amazing. || A bakery smell on your street sounds dangerous in the best way.",
                "-Got lost walking somewhere I've been a dozen times. My sense of direction is gone.",
                "-Parking around here is impossible on weekends.",
                "-The morning train was so packed my feet barely touched the floor.",
                "A guy on the train was eating a whole rotisserie chicken. At 8am. || Ha, city life in a nutshell.",
                "My bus driver said good morning to every single passenger. Made my day. || Little moments like that really help.",
            ],
            "neutral": [
                "Ha, city life.",
            ],
            "pos": [
                "Love that.",
            ],
            "neg": [
                "That sounds like a rough way to start the day.",
                "Ugh, getting around is exhausting sometimes.",
            ],
        },
        "tech": {
            "weight": 4,
            "user": [
                "My phone battery dies by noon now. Time for a new one? || Could be the battery wearing out. Worth checking battery health before buying a new phone.",
                "I'm trying to learn some basic coding in the evenings and it's slow going. || Slow going is still going! Stick with it.",
                "-Updated my laptop and now nothing is where it used to be.",
                "I downloaded a {lang} app and I'm on a six-day streak. Don't jinx it. || Don't worry, I won't jinx it. Keep that streak alive!",
                "Spent an hour trying to fix the printer before realizing it was unplugged. || Ha, the classic unplugged fix.",
                "-I keep seeing ads for stuff I only thought about. It's creepy.",
                "-Dropped my phone in the sink. It survived. I did not, emotionally.",
                "-My laptop fan has started making a noise like a tiny helicopter.",
            ],
            "neutral": [
                "Technology is a mixed blessing.",
            ],
            "pos": [
                "Nice!",
            ],
            "neg": [
                "Ugh, tech trouble is the worst.",
                "That's annoying. Maybe it's time for a checkup or a replacement?",
            ],
        },
        "ask": {
            "weight": 4,
            "pairs": [
                (
                    "Can you recommend a {bookgenre} book? Something easy to get into.",
                    "Sure! Try a recent award shortlist in that genre; those are usually easy, solid picks.",
                ),
                (
                    "What's a quick dinner I can make with {ingredient}?",
                    "A simple stir-fry or a frittata-style bake works with almost anything. Quick and hard to mess up.",
                ),
                (
                    "How do I stop procrastinating on something boring?",
                    "Try the two-minute rule: promise yourself just two minutes. Momentum usually takes over.",
                ),
                (
                    "Any tips for falling asleep faster?",
                    "Keep the room cool and dark, put the phone away a bit earlier, and try slow breathing for a few minutes.",
                ),
                (
                    "How long should I steep green tea?",
                    "About two to three minutes, with water a little below boiling.",
                ),
                (
                    "What's a good gift for a coworker who's leaving?",
                    "A nice notebook, a plant, or a card everyone signs. Simple and thoughtful.",
                ),
                (
                    "Is it normal to feel tired after a long weekend?",
                    "Totally. Changes in routine and sleep can leave you groggy for a day or two.",
                ),
                (
                    "What should I do with overripe bananas?",
                    "Banana bread is the classic, or freeze them for smoothies.",
                ),
                (
                    "How do I politely say no when someone asks for a favor I don't have time for?",
                    "Be short and kind: thank them, say you can't take it on right now, and skip the long explanation.",
                ),
                (
                    "How often should I water a snake plant?",
                    "Not often. Every two to three weeks, and let the soil dry out completely in between.",
                ),
                (
                    "What's a good way to remember people's names?",
                    "Repeat the name back when you meet them and use it once more in the conversation.",
                ),
                (
                    "How do I get a coffee stain out of a white shirt?",
                    "Rinse with cold water from the back, then dab with a bit of dish soap before washing.",
                ),
                (
                    "Should I learn {lang} or something more practical?",
                    "Pick whatever you'll actually enjoy practicing. Interest keeps you going more than practicality.",
                ),
                (
                    "What's a fun thing to do on a rainy {weekday} evening?",
                    "A movie with snacks, a puzzle, or trying a new recipe. Cozy wins.",
                ),
            ],
        },
    },
}

ZH = {
    "slots": {
        "weekday": ["周一", "周二", "周三", "周四", "周五"],
        "meeting_hour": ["八点", "八点半", "九点", "九点半", "十点"],
        "wake_hour": ["三点", "三点半", "四点", "四点半", "五点"],
        "nap_hour": ["四点", "五点", "六点"],
        "late_hour": ["九点", "十点", "十点半", "十一点"],
        "coworker": [
            "老张",
            "小李",
            "王姐",
            "小赵",
            "刘哥",
            "阿琪",
            "小孙",
            "小何",
            "阿凯",
            "杨姐",
            "老马",
            "丽丽",
        ],
        "friend": [
            "小林",
            "阿杰",
            "王倩",
            "老刘",
            "佳佳",
            "小美",
            "大伟",
            "思思",
            "阿峰",
            "琳琳",
            "萌萌",
            "小鹿",
        ],
        "baked": ["戚风蛋糕", "曲奇", "吐司", "玛芬", "司康", "蛋挞", "肉桂卷"],
        "dish": [
            "番茄炒蛋",
            "地三鲜",
            "凉拌黄瓜",
            "清炒西兰花",
            "醋溜土豆丝",
            "蛋炒饭",
            "香菇青菜",
            "家常豆腐",
            "蒜蓉空心菜",
            "手撕包菜",
            "咖喱土豆",
            "韭菜炒鸡蛋",
            "干煸四季豆",
        ],
        "cuisine": ["云南菜", "湘菜", "泰国菜", "韩餐", "素菜", "西北面食", "贵州菜"],
        "rdish": ["凉皮", "煎饼", "炒饭", "烤饼", "拌面", "石锅拌饭", "菌菇汤", "酸汤粉"],
        "snack": ["薯片", "辣条", "爆米花", "瓜子", "锅巴", "苏打饼干", "牛轧糖", "海苔"],
        "show": [
            "繁花",
            "漫长的季节",
            "狂飙",
            "隐秘的角落",
            "甄嬛传",
            "武林外传",
            "请回答1988",
            "老友记",
            "我的阿勒泰",
            "庆余年",
            "去有风的地方",
        ],
        "mood": ["轻松搞笑", "悬疑烧脑", "治愈", "恐怖", "热血", "温情", "有点伤感"],
        "bookgenre": ["推理", "科幻", "武侠", "历史", "悬疑", "言情"],
        "podtopic": ["历史", "心理学", "宇宙", "经济学", "考古", "深海", "都市传说", "古代沉船"],
        "number": ["47", "112", "238", "63", "89", "300", "154"],
        "steps": ["一万二", "一万五", "一万八", "两万", "两万二"],
        "place": ["颐和园", "奥森公园", "798", "什刹海", "植物园", "朝阳公园", "那家新开的书店"],
        "hill": ["香山", "百望山", "凤凰岭", "八大处"],
        "worry": ["下周的汇报", "体检结果", "涨房租的事", "要跟朋友摊牌的事", "年中考核", "发错的一封邮件"],
        "chore": [
            "交报销单",
            "整理换季衣服",
            "清理冰箱",
            "退快递",
            "洗完那一堆脏衣服",
            "约好剪头发",
            "修好那个晃来晃去的柜子",
        ],
        "gadget": ["空气炸锅", "蓝牙音箱", "扫地机器人", "电动牙刷", "平板", "降噪耳机", "标签机"],
        "destination": ["云南", "新疆", "泰国", "冰岛", "西藏", "厦门", "意大利", "青海", "大理"],
        "city": ["上海", "杭州", "武汉", "西安", "南京", "长沙", "重庆"],
        "lang": ["英语", "法语", "韩语", "西班牙语", "德语"],
        "ingredient": ["鸡蛋", "鹰嘴豆", "菠菜", "豆腐", "土豆", "剩米饭", "西葫芦"],
        "weather": ["阴天", "下雨", "刮大风", "雾蒙蒙的", "灰蒙蒙的", "阴沉沉的"],
        "relative": ["我小姨", "我舅舅", "我表姐", "我妈", "我爸", "我哥"],
    },
    "openers": [
        "说起来，",
        "跟你讲，",
        "对了，",
        "怎么说呢，",
        "汇报一下：",
        "今天的流水账：",
        "嗯……",
        "我跟你说，",
        "随便聊聊，",
        "分享一下，",
        "今天啊，",
    ],
    "openers_neg": ["唉，", "烦死了，", "吐槽一下：", "今天不太顺，"],
    "ask_openers": ["问你个事，", "突然想问一下，", "请教一下：", "有个小问题：", "嗯……"],
    "tails": [
        "就这样。",
        "你今天怎么样？",
        "就是想找个人说说。",
        "哈哈。",
        "现在想想还挺好笑的。",
        "生活就是这样吧。",
        "反正今天就是这么过的。",
        "也不是什么大事，就是想跟你说说。",
        "不知道为什么要跟你讲这个，反正就讲了。",
        "你能懂吧？",
        "先跟你报备一下。",
    ],
    "tails_neg": [
        "真是的。",
        "不是抱怨，就是说说。",
        "算了，无所谓。",
        "怎么老是我。",
        "是不是很离谱？",
        "服了。",
    ],
    "generic": {
        "neutral": [
            "嗯，我懂。",
            "谢谢你跟我说这些，你自己怎么看？",
            "也是。",
            "有道理。",
            "说实话，听着挺正常的。",
            "今天真是丰富的一天！",
            "然后呢？",
            "原来如此。",
        ],
        "pos": ["这个我喜欢。", "太好了！", "哈哈，听着就开心。", "真不错！"],
        "neg": [
            "辛苦了，撑住。",
            "听起来事情挺多的，你还好吗？",
            "唉，太烦了。",
            "哈哈，经典。",
            "我明白，想多聊聊吗？",
        ],
    },
    "greetings": {
        "morning": ["早呀！咖啡在手。", "早上好，难得起这么早。", "早，还没完全醒。", "上班前来跟你聊两句。"],
        "lunch": ["午休时间，来打个招呼。", "边吃外卖边来找你聊天。", "中午好！刚吃完饭。"],
        "evening": [
            "我回来啦。",
            "好久没聊了！",
            "晚上好，有空聊聊吗？",
            "又是我。",
            "哈喽哈喽。",
            "终于到家了，嗨。",
            "总算能坐下来歇会儿了。",
            "今天真是漫长的一天。",
        ],
        "late": ["睡不着，来找你了。", "我知道很晚了。", "还没睡，陪我聊会儿？", "深夜打卡。"],
    },
    "greeting_replies": [
        "嗨！很高兴见到你，最近怎么样？",
        "你好呀！今天想聊点什么？",
        "欢迎回来！今天过得怎么样？",
        "嗨，随时都乐意陪你聊。",
        "来啦！说说看。",
        "你好！最近还好吗？",
    ],
    "closers": [
        "好了，我该睡了，谢谢你听我说。",
        "我先撤了，回头聊！",
        "好了，继续干活去了，拜拜！",
        "今天就到这儿，晚安！",
        "谢谢，舒服多了，下次聊。",
        "饭好了，先走啦！",
        "我要去努力一下了，祝我好运。",
        "这次真的要睡了。",
    ],
    "closer_replies": [
        "晚安，好梦！",
        "回头聊，照顾好自己！",
        "祝你接下来一切顺利！",
        "随时找我，晚安！",
        "先拜拜啦！",
        "照顾好自己哦！",
    ],
    "topics": {
        "work": {
            "weight": 10,
            "user": [
                "-今天开了一上午的会，从{meeting_hour}一直开到午饭。",
                "-同事{coworker}又在全员群里点了“回复全部”，我真是服了。",
                "-{weekday}就要交方案了，我才刚开了个头，救命。",
                "-花了半天时间修一个被别人改乱的表格。",
                "-今天部门聚餐，挺开心的，就是回来以后活全堆着。",
                "-说实话，我就是盯着电脑屏幕盯累了。",
                "+{coworker}今天带了{baked}来办公室，拯救了我的下午。",
                "-公司网断了两个小时，大家都在工位上发呆。",
                "+今天做的东西被夸了几句，难得心情不错。",
                "-快到绩效考核了，不知道为什么我有点焦虑。",
                "-开视频会我开着静音讲了半天，居然没人提醒我。",
                "-规划会超时了整整一个小时！一个小时！",
                "我在努力学着拒绝那些额外塞过来的活。 || 学会拒绝是很重要的能力，慢慢来，会越来越顺手的。",
                "-上午效率特别高，吃完午饭整个人就废了。",
                "-{coworker}要调去别的部门了，有点舍不得，我们平时挺聊得来的。",
                "+今天在家办公，睡衣都没换，毫无愧疚。",
                "-邮箱里还有{number}封未读邮件，我决定明天再说。",
                "-{weekday}的日程全是会，我都不知道什么时候干正事。",
                "-又有人在茶水间用微波炉热鱼，整层楼都是味儿。",
                "-领导这周第三次改我们的一对一时间了。",
                "-加班到很晚，整栋楼安静得有点瘆人。",
                "组里两个人为了一个字体吵起来了，我离得远远的。 || 哈哈，远离字体之争是明智的选择。",
                "+我和{coworker}终于把折磨了我们一周的bug修好了！",
                "-公司新上了个项目管理系统，谁都找不到东西在哪。",
                "-今天要给客户演示，电脑偏偏在开始前自动更新。",
                "{coworker}刚升了组长，挺好的，就是我们整个会议安排都要变了。 || 升职是好事，虽然日程大调整确实烦。",
                "我们组下个月要招两个新人，最近我一直在陪着面试。 || 这可占不少时间。有让你印象深的候选人吗？",
            ],
            "neutral": [
                "职场真是什么事都有。",
                "你自己怎么看这件事？",
            ],
            "pos": [
                "被认可的感觉真好！",
                "太好了，小胜利也值得庆祝！",
                "哈哈，这种日子最舒服了。",
            ],
            "neg": [
                "听着就好累，下班后有给自己留点时间吗？",
                "确实挺烦的，希望明天能顺一点。",
                "这种日子真的很消耗人。",
                "今晚可以好好放松一下了。",
                "唉，后来好点了吗？",
            ],
        },
        "weather": {
            "weight": 6,
            "user": [
                "-今天又{weather}，我真的受够了。",
                "[ws]+终于出太阳了！好久以来第一次在外面吃午饭。",
                "-早上风大得把我伞都吹翻了。",
                "[w]昨晚下雪了，外面像明信片一样，就是路太滑了。 || 雪景好看，走路可要小心点。",
                "[ws]都{month}了居然这么暖和，街上都有人穿短袖了。 || 哈哈，第一个暖和天总有人急着穿短袖。",
                "-回家路上被雨淋成了落汤鸡。",
                "-天气预报说晴天，结果下了一下午雨，经典。",
                "[su]-今天湿度太高，头发完全不听话。",
                "早上起来雾大得连对面楼都看不见。 || 大雾天有种说不出的神秘感，出门注意安全。",
                "[su]-昨晚打雷打了半宿，我基本没睡着。",
                "这种阴沉沉的天只想窝在被子里。 || 窝着就窝着吧，泡杯热茶？",
                "+今天天气特别适合散步，我真的去走了一圈。",
                "[w]-屋里暖气太足了，热得像桑拿房。",
                "[s]-杨絮又开始飞了，眼睛痒了一整天。",
                "[w]-今天早上冷得我脸都冻僵了。",
                "[u]-这周末要到三十七度，我已经开始融化了。",
                "[s]+楼下的花全开了，一夜之间满街都是粉的。",
                "[u]现在快八点天才黑，感觉时间都乱了。 || 夏天傍晚长，正好出去走走。",
                "[w]-五点多天就黑了，脑子以为已经半夜了。",
                "[s]-沙尘暴又来了，出门一嘴沙子。",
            ],
            "neutral": [
                "天气真的很影响心情。",
                "老天爷有时候真会开玩笑。",
            ],
            "pos": [
                "听着好舒服，这种天气要好好享受。",
                "趁着好天气多出去走走！",
                "真好！",
            ],
            "neg": [
                "听着就难受。",
                "希望赶紧好起来。",
                "撑住，天气总会变好的。",
                "唉，这天气谁都顶不住。",
            ],
        },
        "food": {
            "weight": 9,
            "user": [
                "+晚上做了{dish}，说实话味道还挺不错。",
                "最近在努力自己做饭，不想天天点外卖了。 || 自己做饭很棒，下一道想做什么？",
                "+楼下新开了一家{cuisine}馆子，那个{rdish}绝了。",
                "晚饭就吃了碗泡面，别骂我。 || 泡面也是一顿饭，不评判。",
                "-周日一口气备了一周的饭，现在已经吃腻{dish}了。",
                "一整天都特别想吃{snack}，莫名其妙。 || 有时候就得向馋虫投降，打算去买吗？",
                "-煮饭居然煮糊了，我也不知道怎么做到的。",
                "+{friend}教了我一招做{dish}的诀窍，简直打开新世界。",
                "[su]+早市的桃子好新鲜，一不小心买多了。",
                "这周第三次点外卖了，罪过罪过。 || 总有那么几周是外卖周，不丢人。",
                "+第一次烤{baked}，长得丑，但是好吃。",
                "+最近迷上了喝汤，番茄汤、玉米汤轮着来。",
                "+和{friend}去吃了早午餐，松饼有我脸那么大。",
                "-每次买的小葱放冰箱里都放蔫了。",
                "+在努力少喝咖啡多喝水，第三天了，还行。",
                "-早上咖啡机坏了，只能下楼买，钱包在哭泣。",
                "做了一大锅{dish}，估计能吃到{weekday}。 || 起码这周剩菜不愁了。",
                "-第一次自己蒸馒头，出锅硬得像砖头。",
                "-去超市转了一圈，花的钱是计划的两倍，结果还是不知道晚饭吃啥。",
                "+公司楼下有个小摊的{rdish}特别好吃，我现在是常客了。",
                "+最近什么都想加点辣椒油，什么都。",
                "+边看电视边把一整袋{snack}吃完了，毫无愧疚。",
            ],
            "neutral": [
                "说到吃的总是很开心。",
                "你平时最喜欢做什么菜？",
            ],
            "pos": [
                "听起来好香！",
                "被你说饿了。",
                "说实话，这顿听着很不错。",
                "太棒了！",
            ],
            "neg": [
                "哈哈大家都翻过车。",
                "啊这，也太惨了。",
                "下次一定会更顺的。",
            ],
        },
        "media": {
            "weight": 8,
            "user": [
                "昨晚开始看《{show}》，一不小心刷到两点，连看了五集。 || 这是好剧的标志！现在看到哪了？",
                "终于把《{show}》看完了，结局有点一言难尽。 || 哈哈，结局确实难写。至少说得通吗？",
                "有什么好看的电影推荐吗？今晚想看点{mood}的。 || 说一部你最近喜欢的电影，我按那个感觉给你推荐。",
                "+最近上班路上在听一个讲{podtopic}的播客，挺有意思。",
                "+第三遍重刷《{show}》，这是我的下饭剧。",
                "-和{friend}去看电影，旁边一个大哥全程剧透。",
                "+在看一本{bookgenre}小说，看到一半停不下来。",
                "网上到处都是《{show}》的剧透，我得赶紧追。 || 剧透太讨厌了，要不先屏蔽几个关键词？",
                "电影开场二十分钟我就睡着了，老样子。 || 哈哈，看电影睡着也是一种放松。",
                "+看了个关于{podtopic}的纪录片，到现在还在想。",
                "+这周歌单全是十几年前的老歌，单曲循环。",
                "我是不是有点怪，比起大多数专辑，我更爱听游戏配乐。 || 一点都不怪！很多游戏配乐本来就是为了当背景音乐做的。",
                "一边看《{show}》一边拼一千片的拼图，我当时怎么想的。 || 好大的工程！不过拼图配剧很治愈。",
                "+和{friend}去听了场脱口秀，笑到流眼泪。",
                "本来想开一部新剧，结果又打开了《{show}》。 || 哈哈，下饭剧总是赢。",
                "+图书馆预约了好几个月的书终于到了，一本最近特别火的{bookgenre}小说。",
                "+在公园听了场露天演出，一个本地乐队，比想象中好太多。",
            ],
            "neutral": [
                "听起来挺有意思，讲什么的？",
                "推荐吗？",
            ],
            "pos": [
                "听着好好玩！",
                "这样的夜晚最舒服了。",
                "太好了，捡到宝了。",
            ],
            "neg": [
                "太讨厌了。",
                "哈哈，总有这么一个人。",
            ],
        },
        "sleep": {
            "weight": 6,
            "user": [
                "-昨晚睡得很差，{wake_hour}就醒了。",
                "-这周想争取十二点前睡，第一天就失败了。",
                "-下午{nap_hour}睡了个午觉，现在精神得不行，失策。",
                "做了个怪梦，梦见我要考一门从来没上过的课。 || 这种梦很常见，多半是压力在作怪。",
                "+昨晚居然睡满了八个小时，感觉重获新生。",
                "-楼上半夜一点在搬家具，什么情况。",
                "-睡前刷手机刷太久了，我知道不好，就是停不下来。",
                "在试晚上{late_hour}以后不看屏幕，不知道能坚持几天。 || 好主意！哪怕坚持几天也会有区别。",
                "-周末一过作息全乱了。",
                "+今天难得比闹钟醒得早，反而不知道干嘛。",
                "-老是凌晨{wake_hour}醒，然后开始回想好多年前的尴尬事。",
                "+换了个新枕头，感觉人生都被改变了。",
                "又梦见牙掉了，为什么这个梦这么常见？ || 这是最常见的梦之一，压力大或焦虑的时候特别容易做。",
                "-早上按了五次贪睡，起来还是像丧尸。",
            ],
            "neutral": [
                "睡眠真是门玄学。",
            ],
            "pos": [
                "太好了！睡好了什么都好。",
                "值得庆祝！",
            ],
            "neg": [
                "没睡好，是有什么心事吗？",
                "希望今晚能睡个好觉。",
                "这样太折磨人了，今晚早点睡吧。",
            ],
        },
        "weekend": {
            "weight": 7,
            "user": [
                "周末有什么安排吗？我完全空着，太爽了。 || 完全空着的周末太棒了，好好享受无所事事！",
                "-周六大扫除了一整天，现在需要再来一个周末休息。",
                "+周日和{friend}去爬了{hill}，腿到现在还酸。",
                "-这周末也太短了吧。",
                "如果天气好，周六想去{place}转转。 || 听着不错，祈祷天气好！",
                "昨晚玩桌游玩到差点翻脸，大富翁太伤感情了。 || 哈哈，大富翁最伤感情了。谁赢了？",
                "+周日啥也没干，完美。",
                "周末帮{friend}搬家，再也不干了（下次肯定还帮）。 || 够朋友！腰还好吗？",
                "+小区这周末有个市集，可能去逛逛。",
                "逛二手市场淘到一盏蘑菇形状的台灯，果断买了。 || 蘑菇台灯听着超可爱。",
                "+整个周末都裹着毯子在沙发上吃零食。",
                "+周六和{friend}去了{place}，出去透透气真好。",
                "+周六睡到十一点，一点都不后悔。",
                "-周日去了家新开的早午餐店，排队排了一个小时。",
                "下周有个小长假，我什么计划都没有，要不要安排点什么？ || 可以安排一件小事，比如散个步或者吃顿好的，其他时间留空。",
                "-周六去看了个展，人比画还多。",
                "+周六开车去了一个湖边小镇，整个镇子就一家小饭馆和一家渔具店，特别惬意。",
            ],
            "neutral": [
                "周末总是过得特别快。",
            ],
            "pos": [
                "听起来是很开心的一天！",
                "真不错！",
                "休息本身就是很好的安排。",
            ],
            "neg": [
                "周末永远不够长。",
                "放假还这么累，辛苦了。",
            ],
        },
        "feelings": {
            "weight": 7,
            "user": [
                "今天有点提不起劲，也没什么事，就是很丧。 || 丧的日子谁都有，想聊聊还是想转移一下注意力？",
                "今天心情特别好，也说不上为什么。 || 真为你高兴！好好享受。",
                "最近有点孤单，感觉大家都好忙。 || 听起来真的不容易，想聊的话我一直在。这周有没有可以约的朋友？",
                "-在为{worry}焦虑，虽然我知道大概率没事。",
                "-今天是那种什么都觉得太吵的一天。",
                "有点为自己骄傲，终于把拖了好几周的事搞定了：{chore}。 || 值得骄傲！小胜利会积少成多。",
                "-有点被压垮了，小事一件接一件。",
                "能让我吐槽一下吗？今天被一百件小事烦到了。 || 当然，尽管吐槽，发生什么了？",
                "+最近又开始写日记了，还挺有用的。",
                "刚才莫名其妙对{friend}发了脾气，现在有点后悔。 || 要不找个机会说开？对方多半能理解。",
                "[ws]+今天发现天黑得越来越晚了，莫名开心。",
                "-感觉自己一直很忙，但什么都没干成。",
                "今天就是……挺好的。没什么波澜，我很满意。 || 平平淡淡的好日子最难得。",
                "有时候会想，我这样过日子是不是不够努力。 || 这是很正常的感受。说实话，你已经在扛很多事了。",
                "-又在网上跟别人比较了，心情不太好。",
            ],
            "neutral": [
                "谢谢你愿意跟我说。",
            ],
            "pos": [
                "真好，听着就开心。",
                "好好留住这种感觉！",
            ],
            "neg": [
                "听起来不容易，对自己温柔一点。",
                "我在呢，想聊聊吗？",
                "这些压在一起确实很累。",
            ],
        },
        "exercise": {
            "weight": 6,
            "user": [
                "早上去跑了个步，只跑了三公里，但也算跑了。 || 也算跑了！出门就是胜利。",
                "上了节瑜伽课，发现自己一点都不柔软。 || 柔韧性要慢慢练，练完感觉怎么样？",
                "{weekday}练腿练太狠，今天下楼梯腿都发抖。 || 哈哈，练腿后的楼梯最要命。",
                "+想重新开始游泳，家附近的游泳馆又开了。",
                "又没去健身房。明天，明天一定。 || 明天就明天，不用有负罪感。",
                "+睡前拉伸十分钟，腰舒服多了。",
                "{friend}拉我去打羽毛球，去不去呢？ || 听着挺好玩的，可以先去一次试试。",
                "+今天随便走走就走了{steps}步。",
                "[su]+沿着河边骑共享单车，风景超好。",
                "看了个攀岩纪录片，看得我手心冒汗。 || 这种片子光看着就紧张。",
                "-上了节动感单车，教练跟教官一样吼我们。",
                "+最近每天早上做俯卧撑，已经能做十五个了！",
                "小区新装了健身器材，天天被大爷们占着练引体向上。 || 哈哈，大爷们才是小区真正的运动健将。",
                "-跟着网上的视频练了一会儿，博主说了十分钟“马上就好”。",
            ],
            "neutral": [
                "动起来就是好的。",
            ],
            "pos": [
                "很棒！",
                "坚持比强度更重要，继续加油！",
                "听起来很舒服。",
            ],
            "neg": [
                "哈哈，听着就累。",
                "悠着点，别太勉强自己。",
            ],
        },
        "family": {
            "weight": 9,
            "user": [
                "我妹给我发了一堆她新发型的照片，问我哪个角度好看。 || 哈哈，这可是大事。最后哪个角度赢了？",
                "+昨晚跟我妹打了两个小时电话，全是废话。",
                "-我哥去年秋天借走的电钻到现在都没还。",
                "我妈打电话问我有没有好好吃蔬菜，一成不变。 || 有些事真的从来不变，不过也挺让人安心的。",
                "我爸学会发语音了，现在天天给我发三分钟的天气播报。 || 很有爸爸风格了。",
                "我表妹明年结婚，家族群已经炸了。 || 哈哈，家族群一到办喜事就特别热闹。",
                "+我奶奶突然给我寄了张明信片，就为了问声好，感动了一整周。",
                "我爸妈在装修厨房，为瓷砖颜色吵了一周。 || 哈哈，为瓷砖颜色能吵一周，很有生活气息。",
                "我跟我哥为小时候一个游戏的规则吵起来了，幼稚。 || 小时候的规则可神圣了。最后谁对？",
                "好怀念以前周末一大家子一起吃饭。 || 要不提议恢复一下，哪怕一个月一次？",
                "-我小姨每次见面都问我什么时候结婚，每次！",
                "+我和我妹开着视频“一起”追剧，挺好玩的。",
                "我爸发来一张他种的西红柿，就一个，骄傲得不行。 || 一个也是收成！他确实该骄傲。",
                "小时候我爷爷常带我去河边钓鱼，今天突然想起来了。 || 这是很珍贵的回忆。",
                "-我妈说今年夏天全家要去拍全家福，救命。",
                "-我妹借了我最好的那件大衣，还回来的时候多了块不明污渍。",
                "{relative}给我转发了一篇很长的养生文章，一句话都没说。 || 哈哈，经典的长辈转发。",
                "-家族群已经开始吵下次过节去谁家吃饭了。",
                "+我哥新养了只小狗，现在他发给我的消息全是狗照片。",
                "+给我外婆打电话，她把同一个故事讲了三遍，但我一点都不嫌烦。",
                "我妹想去纹身，天天找我参谋图案。 || 好玩！她现在最喜欢哪个图案？",
                "我表姐刚在市中心一家律所找了份助理的工作，才上一周班就开始嫌通勤太远了。 || 新工作加上远通勤确实难熬，希望她慢慢适应。",
                "我哥和我嫂子在考虑搬到离她爸妈近一点的地方，可能明年春天，还没定。 || 这是个大决定。那样会离你更近还是更远？",
                "我小姨前两年做了膝盖手术，到现在还逢人就夸她的康复师。 || 哈哈，看来这位康复师很厉害。",
                "我爸一直念叨等有空了要买辆房车，我妈每次都假装没听见。 || 哈哈，经典的拉锯战。你觉得谁会赢？",
            ],
            "neutral": [
                "家人嘛，又可爱又让人头大。",
                "哈哈，家里的事。",
            ],
            "pos": [
                "好暖啊。",
                "真好，听得出你们感情很好。",
            ],
            "neg": [
                "家里人有时候是挺让人头大的。",
                "哈哈，这也太气人了，你说他们了吗？",
            ],
        },
        "pets": {
            "weight": 8,
            "user": [
                "下雨天狗子死活不肯出门，坐在门口用眼神谴责我。",
                "猫现在把我键盘当床了。",
                "邻居家的狗每次快递员来都叫，比闹钟还准。",
                "{friend}家的猫生了一窝小猫，在找人领养，我有点心动。 || 小猫太难拒绝了！你是认真考虑吗？",
                "今天刷了太多猫咪视频，活都没干。",
                "狗会做梦吗？它睡觉的时候爪子一直在动。 || 很可能会！狗的睡眠阶段和人差不多，爪子乱动可能就是在梦里跑。",
                "+带狗去公园，它跟一只巨型贵宾交上朋友了。",
                "猫当着我的面把杯子推下了桌，还一直盯着我看。",
                "-现在猫粮狗粮越来越贵了。",
                "咖啡里发现了一根猫毛，我都不知道怎么进去的。",
                "窗外有只喜鹊，成了我家猫的头号敌人。",
                "狗子吞了半只袜子，我慌了一晚上，还好没事。 || 没事就好！那一下肯定吓坏了。",
                "+公园里有人想摸狗，它立马躺下翻肚皮。",
                "-早上五点猫直接坐我脸上把我叫醒，真是谢谢它。",
                "+同事把狗带到公司，整个下午没人干活。",
                "在宠物店挑了半天玩具，狗五分钟就拆了。",
                "邻居家有只特别大的老纽芬兰犬，天天横躺在楼道里，谁来都不让。 || 哈哈，一只很有主见的温柔巨人。",
            ],
            "neutral": [
                "哈哈，毛孩子真会表达自己。",
                "动物真的各有个性。",
                "哈哈，画面感太强了。",
                "好可爱。",
            ],
            "pos": [
                "好可爱！",
                "说实话，这听着是今天最开心的部分。",
            ],
            "neg": [
                "哈哈，真是让人又气又爱。",
                "唉，这个确实头疼。",
            ],
        },
        "travel": {
            "weight": 6,
            "user": [
                "好想去海边度个假，没有工作消息的那种。 || 你是需要出去走走了！最想去哪？",
                "{friend}刚从{destination}回来，朋友圈照片看得我好羡慕。 || 这种照片最勾人了，你也想去吗？",
                "-下个月要去{city}出差，两天全是会。",
                "有什么轻装出行的技巧吗？我每次都带太多东西。 || 衣服卷起来放更省地方，鞋子只带一双。",
                "-最近机票好贵，看得我直接放弃。",
                "今年夏天想自驾游，但还没想好去哪。 || 自驾很棒！想看山、看海，还是逛小镇？",
                "护照快过期了，得趁早去换。 || 是得早点办，换护照有时候要等挺久。",
                "说实话，旅行我最喜欢的部分是在机场买零食。 || 机场零食绝对算旅行亮点。",
                "{coworker}去{destination}玩了一周，回来整个人都松弛了，羡慕。",
                "+在看山里的民宿，想找个长周末去住两晚。",
                "从{city}回来的航班延误了四个小时，机场简直是炼狱。 || 延误最烦了，希望你带了本好书。",
                "+看了个关于{destination}的纪录片，现在它也进了我的清单。",
                "我每次旅行前都计划一大堆，最后清单上的一个都没去。",
                "{friend}去越南穷游了两周，回来带了四千多张照片。 || 四千张！你被拉着看完整套照片了吗？",
            ],
            "neutral": [
                "旅行的念头本身就很治愈。",
                "有时候做计划就是一半的乐趣。",
            ],
            "pos": [
                "听着就很美！",
            ],
            "neg": [
                "唉，这个确实扫兴。",
                "出差挺累的，有机会顺便吃顿好的吗？",
            ],
        },
        "health": {
            "weight": 7,
            "user": [
                "-感觉要感冒了，嗓子有点疼。",
                "今天去洗牙了，没有蛀牙！小胜利。 || 没有蛀牙真是胜利。",
                "头疼了一下午，估计是水喝少了。 || 缺水引起的头疼很隐蔽，先喝一大杯水？",
                "-坐了一天破椅子，腰疼。",
                "[w]今天打了流感疫苗，胳膊有点酸。 || 打了就安心了，真棒。",
                "[s]-花粉过敏又犯了，今天打了几十个喷嚏。",
                "-在戒咖啡因，头疼是真的。",
                "终于约了眼科检查，盯屏幕盯得眼睛发花好几个月了。 || 早该查查了，屏幕太伤眼睛。",
                "下周体检，每次体检前我都莫名紧张。 || 体检前紧张太正常了。",
                "-早上脚趾撞到床角，疼得我直骂。",
                "-够高处的箱子把肩膀扭了一下。",
                "-爬地铁站的楼梯都喘，我太缺乏锻炼了。",
                "打嗝打了二十分钟了，快让它停下。 || 试试小口慢慢喝水，或者憋一会儿气，祝你好运。",
                "-昨晚落枕了，现在脖子只能往左转。",
                "-药店排了四十个人的队，我只是想买个润喉糖。",
                "我同事养了好多年猫，最近才查出来对猫过敏，太残忍了。 || 哎，这也太难了。猫还继续养吗？",
                "我妈最近换了一种降压药，说早上起来有点头晕。 || 这个值得跟医生说一下，有时候调一下服药时间或剂量就好了。",
            ],
            "neutral": [
                "照顾好自己。",
            ],
            "pos": [
                "真棒！",
            ],
            "neg": [
                "早点好起来！多休息多喝水。",
                "哎哟，这几天悠着点。",
                "听着就难受，注意休息。",
            ],
        },
        "money": {
            "weight": 5,
            "user": [
                "这个月在努力记账控制开销，进展……还行。 || 记账不容易，坚持一部分也算数。",
                "新买了个{gadget}，已经开始怀疑是不是真需要。 || 哈哈，买完就开始纠结，用过了吗？",
                "-最近超市什么都好贵。",
                "+终于把三个不用的会员都取消了。",
                "+一件拖了六周的外套今天终于退了。",
                "+冲动买了几盆绿植，家里快成丛林了。",
                "房租要涨了，有点焦虑。 || 涨房租挺让人焦虑的，涨得多吗？",
                "+在旧外套口袋里翻出五十块钱，今天最开心的事。",
                "在攒钱换电脑，现在这台风扇响得像飞机起飞。",
                "-做了个开销表，我都不敢点开看。",
                "半夜网购就应该被禁止，三个快递在路上了。 || 半夜购物太危险了。",
                "+收到一笔忘了的退款，准备奖励自己一顿好的。",
            ],
            "neutral": [
                "钱的事总是让人有点纠结。",
            ],
            "pos": [
                "哈哈，意外之喜！",
                "爽！",
            ],
            "neg": [
                "现在什么都贵。",
                "别太焦虑，一步步来。",
            ],
        },
        "home": {
            "weight": 6,
            "user": [
                "洗了三桶衣服，还是觉得没衣服穿。 || 洗衣服真是个无尽循环。",
                "-厨房水池漏水，房东说“有空来看看”。",
                "+把客厅重新布置了一下，感觉像换了个家。",
                "水池里一堆碗在盯着我。 || 哈哈，碗可以再等五分钟。",
                "又买了盆绿萝，希望这次别养死。 || 绿萝挺好养的，别太担心。",
                "吸尘器伸到沙发底下，吸出来一堆发圈。",
                "-楼里有人在学小号，每天晚上七点准时开始。",
                "整理衣柜整理到一半，翻出老照片看了一个小时。",
                "-烟雾报警器半夜三点开始滴滴响，世界上最烦的声音。",
                "+终于把靠在墙边好几个月的画挂上去了。",
                "+把卫生间彻底刷了一遍，感觉自己是个靠谱的大人了。",
                "-楼里的洗衣机又坏了，只能去自助洗衣店。",
                "自己装了个书架，最后剩了两颗螺丝，应该没事吧？ || 剩两颗螺丝几乎是传统了，不晃就没事！",
                "我一直说要学织毛衣，目前买了一堆毛线，一条围巾都没织出来。 || 哈哈，囤毛线也算迈出第一步了。",
            ],
            "neutral": [
                "哈哈，过日子就是这样。",
                "家务真是干不完。",
            ],
            "pos": [
                "干完这个好有成就感！",
                "真不错！",
            ],
            "neg": [
                "唉，太烦了，希望早点解决。",
                "听着就头疼。",
            ],
        },
        "friends": {
            "weight": 6,
            "user": [
                "+和{friend}吃饭，一直聊到餐厅打烊。",
                "-{friend}又临时放我鸽子，有点不爽。",
                "去了个聚会，基本谁都不认识，尴尬。 || 和陌生人聚会挺难的，有认识到聊得来的人吗？",
                "+跟大学室友打了个电话，聊得很开心。",
                "我们几个朋友组了个读书会，看看有几个人真的会读。 || 哈哈，读书会的永恒难题。第一本读什么？",
                "{friend}失恋了，我一会儿带着冰淇淋过去陪陪。 || 你真好，冰淇淋是正确选择。",
                "-我回消息特别慢，现在还有十几条没回。",
                "-聚会上有人问我做什么工作，我脑子一片空白。",
                "和{friend}去上了陶艺课，我的碗看起来像顶帽子。 || 哈哈，帽子碗也是能用的！",
                "去{friend}的生日K歌局，我选的歌要被笑一辈子了。",
                "我和{friend}认识这么多年了，还是没法统一去哪吃饭。",
                "-群里说好一起去玩，结果只有我一个人真订了票。",
                "{friend}刚搬去西安当老师了，天天给我发城墙的照片。 || 听起来是个不错的变化。你有想过去那边玩吗？",
                "{friend}终于从救助站领养了一只猫，一只脾气很臭的橘猫，名字叫芝士。 || 哈哈，橘猫自带喜剧效果。",
                "{friend}学钢琴一年了，刚参加了第一次小型演奏会，我去捧场了。 || 你去捧场真好。表现得怎么样？",
            ],
            "neutral": [
                "朋友在一起总有故事。",
                "哈哈，太真实了。",
            ],
            "pos": [
                "这种时光最舒服了。",
                "听着很开心。",
            ],
            "neg": [
                "老是这样确实挺让人不爽的。",
                "哈哈，尴尬，不过谁都遇到过。",
            ],
        },
        "commute": {
            "weight": 5,
            "user": [
                "-早上地铁晚点了二十分钟，一句解释都没有。",
                "-公交上有人外放音乐，音量拉满。",
                "-楼下在施工，早上七点就开始电钻。",
                "-今天堵车堵到我走路都比车快。",
                "我家楼下新开了家面包店，整条街都是香味。 || 楼下有面包店，危险又幸福。",
                "-去一个去过十几次的地方居然迷路了，我的方向感没了。",
                "-周末这边停车根本找不到位。",
                "-早高峰的地铁挤得我脚都不沾地。",
                "地铁上有个大哥早上八点在啃一整只烧鸡。 || 哈哈，城市生活的缩影。",
                "今天的公交司机跟每个乘客都说早上好，暖到我了。 || 这种小瞬间真的很治愈。",
            ],
            "neutral": [
                "哈哈，城市生活。",
            ],
            "pos": [
                "真好。",
            ],
            "neg": [
                "这样开始一天也太难了。",
                "通勤真的很消耗人。",
            ],
        },
        "tech": {
            "weight": 4,
            "user": [
                "手机中午就没电了，是不是该换了？ || 可能是电池老化了，换手机前可以先看看电池健康度。",
                "晚上在自学一点编程，进度很慢。 || 慢也是在前进，坚持住！",
                "-电脑更新之后所有东西都换地方了。",
                "下载了个学{lang}的软件，连续打卡六天了，别乌鸦嘴。 || 放心，我不乌鸦嘴，继续保持！",
                "家里打印机折腾了一个小时，才发现没插电。 || 哈哈，经典的没插电。",
                "-总是刷到我刚想过的东西的广告，有点吓人。",
                "-手机掉进水池里了，手机没事，我的心碎了。",
                "-电脑风扇开始发出像小直升机一样的声音。",
            ],
            "neutral": [
                "科技真是让人又爱又恨。",
            ],
            "pos": [
                "不错！",
            ],
            "neg": [
                "唉，设备出问题最烦了。",
                "挺闹心的，要不找时间检修一下？",
            ],
        },
        "ask": {
            "weight": 4,
            "pairs": [
                (
                    "能推荐一本{bookgenre}小说吗？好入门一点的。",
                    "可以找找最近这个类型的获奖或入围作品，一般都好读又不踩雷。",
                ),
                (
                    "家里只有{ingredient}，晚饭能快速做点什么？",
                    "简单炒一下，或者做个蛋饼、烩饭之类的，快又不容易失败。",
                ),
                (
                    "做无聊的事老拖延，怎么办？",
                    "试试“两分钟法则”：先答应自己只做两分钟，开了头通常就停不下来了。",
                ),
                ("有什么让人快点睡着的办法吗？", "房间保持凉快、暗一点，早点放下手机，再做几分钟慢呼吸。"),
                ("绿茶泡多久比较好？", "两三分钟就行，水温比开水稍微低一点。"),
                (
                    "同事要离职了，送什么礼物合适？",
                    "一个好看的本子、一盆绿植，或者大家一起签名的卡片，简单又有心意。",
                ),
                ("放完长假特别累，正常吗？", "很正常，作息和节奏一变，缓一两天很常见。"),
                ("香蕉放得熟过头了，怎么处理？", "可以做香蕉面包，或者冻起来打奶昔。"),
                (
                    "别人找我帮忙但我实在没空，怎么礼貌拒绝？",
                    "简短又友好就行：先谢谢对方，说这段时间实在接不了，不用解释太多。",
                ),
                ("虎皮兰多久浇一次水？", "不用常浇，两三周一次，等土完全干了再浇。"),
                ("怎样才能记住别人的名字？", "认识的时候把名字重复一遍，聊天中再用一次，会记得牢很多。"),
                ("白衬衫沾了咖啡渍怎么洗？", "先从背面用冷水冲，再点一点洗洁精轻轻揉，然后正常洗。"),
                ("学{lang}有用吗，还是学点更实用的？", "选你真会坚持练的那个，兴趣比实用更能让人走得远。"),
                (
                    "{weekday}晚上下雨，在家干点什么好？",
                    "看部电影配零食、拼个拼图，或者试个新菜谱，舒服最重要。",
                ),
            ],
        },
    },
}

# ---------------------------------------------------------------------------
# Generator
# ---------------------------------------------------------------------------

EN_MONTHS = ["", "January", "February", "March", "April", "May", "June", "July"]
ZH_MONTHS = ["", "一月", "二月", "三月", "四月", "五月", "六月", "七月"]
SEASONS = {1: "w", 2: "w", 3: "ws", 4: "s", 5: "s", 6: "u", 7: "u"}
DST_START, DST_END = datetime(2025, 3, 9, 2), datetime(2025, 11, 2, 2)


def _en_offset(local: datetime) -> int:
    """US Pacific time (the English user commutes on BART)."""
    return -7 if DST_START <= local < DST_END else -8


LANGS = {
    "zh": dict(content=ZH, facts=ZH_FACTS, months=ZH_MONTHS, offset=lambda local: 8),
    "en": dict(content=EN, facts=EN_FACTS, months=EN_MONTHS, offset=_en_offset),
}

# (name, weight, local start window in minutes after midnight)
TIME_OF_DAY = [
    ("morning", 12, (7 * 60, 8 * 60 + 30)),
    ("lunch", 18, (12 * 60, 13 * 60)),
    ("evening", 55, (19 * 60, 22 * 60)),
    ("late", 15, (23 * 60, 23 * 60 + 45)),
]

_SLOT = re.compile(r"\{(\w+)\}")
_MARK = re.compile(r"^(?:\[([wsu]+)\])?([+-])?")


def _parse(template: str) -> tuple[str | None, str, str, str | None]:
    """Split a user template into (seasons, tone, text, own reply)."""
    m = _MARK.match(template)
    body, _, reply = template[m.end() :].partition(" || ")
    return m.group(1), m.group(2) or "", body, reply or None


def _season_ok(template: str, month: int) -> bool:
    seasons = _parse(template)[0]
    return seasons is None or bool(set(seasons) & set(SEASONS[month]))


def _fill(text: str, rng: random.Random, slots: dict, month_name: str) -> str:
    return _SLOT.sub(lambda m: month_name if m.group(1) == "month" else rng.choice(slots[m.group(1)]), text)


def _weighted(rng: random.Random, items: list, weights: list):
    return rng.choices(items, weights=weights, k=1)[0]


def plan_timeline(seed: int) -> dict:
    """Language-independent structure: session days/times/sizes and fact positions.

    Both languages share it, so fact *depth* (how far back each fact sits) is the
    same in zh and en and results are directly comparable.
    """
    rng = random.Random(f"{seed}-plan")
    days = sorted([0, SPAN_DAYS, *rng.sample(range(1, SPAN_DAYS), N_SESSIONS - 2)])
    sizes = [rng.randint(7, 16) for _ in range(N_SESSIONS)]
    while sum(sizes) != N_PAIRS:
        i = rng.randrange(N_SESSIONS)
        if sum(sizes) < N_PAIRS and sizes[i] < 17:
            sizes[i] += 1
        elif sum(sizes) > N_PAIRS and sizes[i] > 6:
            sizes[i] -= 1
    sessions, reserved, pair = [], set(), 0
    for s in range(N_SESSIONS):
        tod = _weighted(rng, TIME_OF_DAY, [w for _, w, _ in TIME_OF_DAY])
        minute = rng.randint(*tod[2])
        closer = rng.random() < 0.8
        first, last = pair, pair + sizes[s] - 1
        reserved.add(first)
        if closer:
            reserved.add(last)
        sessions.append(
            dict(index=s, day=days[s], minute=minute, tod=tod[0], closer=closer, first=first, last=last)
        )
        pair += sizes[s]
    candidates = [p for p in range(N_PAIRS) if p not in reserved]
    n_facts = len(EN_FACTS)
    step = len(candidates) / n_facts
    fact_pairs = []
    for i in range(n_facts):
        j = int((i + 0.5) * step) + rng.randint(-3, 3)
        fact_pairs.append(candidates[max(0, min(len(candidates) - 1, j))])
    assert len(set(fact_pairs)) == n_facts and fact_pairs == sorted(fact_pairs)
    return dict(sessions=sessions, fact_pairs=fact_pairs)


class _Picker:
    """Picks filler lines, preferring rarely used templates and never repeating a user turn."""

    def __init__(self, rng: random.Random, content: dict):
        self.rng, self.c = rng, content
        self.sep = " " if content is EN else ""  # between a line and its tail
        self.template_uses: dict[str, int] = {}
        self.seen_user: set[str] = set()

    def user_line(
        self, topic: str, month: int, month_name: str, session_used: set
    ) -> tuple[str | None, str | None, str]:
        """Return (user text, fixed assistant reply or None, tone); (None, None, "") if the topic is used up."""
        spec = self.c["topics"][topic]
        is_ask = "pairs" in spec
        pool = spec["pairs"] if is_ask else spec["user"]
        pool = [t for t in pool if _season_ok(t[0] if is_ask else t, month)]
        for attempt in range(60):
            item = _weighted(
                self.rng, pool, [1.0 / (1 + self.template_uses.get(str(t), 0)) ** 2 for t in pool]
            )
            key = str(item)
            if key in session_used and attempt < 40:
                continue
            if is_ask:
                tone, body, reply = "", item[0], item[1]  # ask answers are slot-free
            else:
                _, tone, body, reply = _parse(item)
            text = _fill(body, self.rng, self.c["slots"], month_name)
            if is_ask:
                if attempt > 0 or self.rng.random() < 0.35:
                    text = self.rng.choice(self.c["ask_openers"]) + text
            elif attempt > 0 or self.rng.random() < 0.6:
                # Openers/tails vary repeated templates and keep filler about as long as fact turns.
                openers = self.c["openers"] + (self.c["openers_neg"] if tone == "-" else [])
                tails = self.c["tails"] + (self.c["tails_neg"] if tone == "-" else [])
                r = self.rng.random()
                if r < 0.8:
                    text = self.rng.choice(openers) + text
                if r >= 0.4:
                    text = text + self.sep + self.rng.choice(tails).strip()
            if text in self.seen_user:
                continue
            self.seen_user.add(text)
            self.template_uses[key] = self.template_uses.get(key, 0) + 1
            session_used.add(key)
            return text, reply, tone
        return None, None, ""

    def reply(self, topic: str, tone: str, previous: str | None) -> str:
        key = {"+": "pos", "-": "neg"}.get(tone, "neutral")
        spec = self.c["topics"][topic]
        r = self.rng.random()
        if r < 0.6:
            pool = spec[key]
        elif r < 0.8:
            pool = spec["neutral"]
        else:
            pool = self.c["generic"][key]
        choice = self.rng.choice(pool)
        while choice == previous and len(pool) > 1:
            choice = self.rng.choice(pool)
        return choice


def _iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def build_language(lang: str, plan: dict, seed: int) -> dict:
    cfg = LANGS[lang]
    content, facts = cfg["content"], cfg["facts"]
    rng = random.Random(f"{seed}-{lang}")
    picker = _Picker(rng, content)
    topics = list(content["topics"])
    weights = [content["topics"][t]["weight"] for t in topics]
    fact_at = {p: i for i, p in enumerate(plan["fact_pairs"])}
    turns: list[dict] = []
    fact_turn: dict[int, int] = {}
    pair = 0
    for sess in plan["sessions"]:
        sid = f"s{sess['index'] + 1:03d}"
        local = START_DATE + timedelta(days=sess["day"], minutes=sess["minute"], seconds=rng.randint(0, 59))
        month, month_name = local.month, cfg["months"][local.month]
        focus: list[str] = []
        while len(focus) < 3:
            t = _weighted(rng, topics, weights)
            if t not in focus:
                focus.append(t)
        session_used: set = set()
        previous_reply = None
        for p in range(sess["first"], sess["last"] + 1):
            if p == sess["first"]:
                user = rng.choice(content["greetings"][sess["tod"]])
                reply = rng.choice(content["greeting_replies"])
            elif p == sess["last"] and sess["closer"]:
                user = rng.choice(content["closers"])
                reply = rng.choice(content["closer_replies"])
            elif p in fact_at:
                fact = facts[fact_at[p]]
                user, reply = fact["text"], fact["reply"]
                fact_turn[fact_at[p]] = len(turns)
            else:
                topic = rng.choice(focus) if rng.random() < 0.7 else _weighted(rng, topics, weights)
                user, reply, tone = picker.user_line(topic, month, month_name, session_used)
                while user is None:  # topic used up: take another one
                    topic = _weighted(rng, topics, weights)
                    user, reply, tone = picker.user_line(topic, month, month_name, session_used)
                if reply is None:
                    reply = picker.reply(topic, tone, previous_reply)
            previous_reply = reply
            utc = local - timedelta(hours=cfg["offset"](local))
            turns.append(dict(session_id=sid, role="user", content=user, timestamp=_iso(utc)))
            local += timedelta(seconds=rng.randint(3, 14))
            utc = local - timedelta(hours=cfg["offset"](local))
            turns.append(dict(session_id=sid, role="assistant", content=reply, timestamp=_iso(utc)))
            local += timedelta(seconds=rng.randint(25, 240))
            pair += 1
    assert pair == N_PAIRS and len(turns) == 2 * N_PAIRS

    questions = []
    for i, fact in enumerate(facts):
        questions.append(
            dict(
                question=fact["question"],
                fact_turn_index=fact_turn[i],
                fact_id=f"{lang}-{i + 1:02d}",
                answer=fact["answer"],
                kind=fact["kind"],
                category=fact["category"],
            )
        )
    _check_said_once(lang, turns, facts, fact_turn)
    last = datetime.strptime(turns[-1]["timestamp"], "%Y-%m-%dT%H:%M:%SZ")
    return dict(turns=turns, questions=questions, questions_asked_at=_iso(last + timedelta(days=2, hours=1)))


def _check_said_once(lang: str, turns: list, facts: list, fact_turn: dict) -> None:
    """Every answer key must occur in exactly one turn: the fact turn."""
    errors = []
    for i, fact in enumerate(facts):
        assert turns[fact_turn[i]]["role"] == "user" and turns[fact_turn[i]]["content"] == fact["text"]
        for key in fact["keys"]:
            if lang == "en":
                pat = re.compile(r"\b" + re.escape(key) + r"\b", re.IGNORECASE)
                hits = [k for k, t in enumerate(turns) if pat.search(t["content"])]
            else:
                hits = [k for k, t in enumerate(turns) if key in t["content"]]
            if hits != [fact_turn[i]]:
                errors.append(
                    f"{lang} fact {i + 1} key {key!r} occurs in turns {hits} (fact turn {fact_turn[i]})"
                )
        assert fact["question"] not in fact["text"]
    assert not errors, "\n".join(errors)


def build(seed: int = SEED) -> dict:
    plan = plan_timeline(seed)
    return {
        "languages": {lang: build_language(lang, plan, seed) for lang in ("zh", "en")},
        "meta": {
            "name": "bilingual_memory",
            "version": 1,
            "generator": "benchmarks/make_bilingual_memory.py",
            "seed": seed,
            "description": (
                "Per language: 1,350 turns of companion chat in 60 sessions over ~6 months; 40 personal "
                "facts each said once by the user; 40 paraphrased questions asked after the last turn. "
                "Hand-written for memsched; not taken from any public benchmark."
            ),
            "question_fields": {
                "fact_turn_index": "index into turns of the user turn stating the fact",
                "kind": "semantic = shares (almost) no content word with the fact; entity = shares one named entity",
            },
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    data = build(args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    args.out.write_text(text, encoding="utf-8")
    for lang, d in data["languages"].items():
        print(f"{lang}: {len(d['turns'])} turns, {len(d['questions'])} questions")
    print(f"wrote {args.out} ({len(text.encode('utf-8')):,} bytes)")


if __name__ == "__main__":
    main()
