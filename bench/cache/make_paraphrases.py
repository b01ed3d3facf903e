#!/usr/bin/env python3
"""Writes bench/cache/paraphrases.tsv: pairs (cached question, query, expected hit, kind) for
the semantic cache's guard evaluation (cache_bench guard; bench/README.md, "The semantic
cache"). Written by hand here, nothing downloaded; deterministic (fixed seed), so the file
only changes when this script does.

  python3 bench/cache/make_paraphrases.py > bench/cache/paraphrases.tsv

expected: yes = the cached answer answers the query (a near-duplicate or paraphrase);
no = it would be a wrong answer (hard negatives: negation, numbers, swapped endpoints, another
entity, a flipped switch, an extra condition, same topic but another question).
"""
import random

rng = random.Random(26)

# Base questions. Each: the question, then hard negatives (kind, text) written for it.
BASES = [
    ("How do I reverse a list in Python?", [
        ("entity", "How do I reverse a list in Java?"),
        ("entity", "How do I reverse a string in Python?"),
        ("topic", "How do I sort a list in Python?"),
        ("condition", "How do I reverse a list in Python without using reverse()?"),
    ]),
    ("What is the capital of France?", [
        ("entity", "What is the capital of Spain?"),
        ("topic", "What is the population of France?"),
        ("topic", "What is the currency of France?"),
    ]),
    ("How do I turn on dark mode in Chrome?", [
        ("polarity", "How do I turn off dark mode in Chrome?"),
        ("entity", "How do I turn on dark mode in Firefox?"),
        ("polarity", "How do I turn on light mode in Chrome?"),
    ]),
    ("Find flights from New York to Los Angeles", [
        ("swap", "Find flights from Los Angeles to New York"),
        ("entity", "Find flights from New York to Chicago"),
        ("topic", "Find hotels in Los Angeles"),
    ]),
    ("Convert 100 Celsius to Fahrenheit", [
        ("swap", "Convert 100 Fahrenheit to Celsius"),
        ("number", "Convert 10 Celsius to Fahrenheit"),
        ("number", "Convert 37 Celsius to Fahrenheit"),
        ("entity", "Convert 100 Celsius to Kelvin"),
    ]),
    ("What is 17 times 23?", [
        ("number", "What is 17 times 24?"),
        ("number", "What is 71 times 23?"),
        ("topic", "What is 17 plus 23?"),
        ("topic", "What is 17 divided by 23?"),
    ]),
    ("Why is the sky blue?", [
        ("negation", "Why is the sky not blue?"),
        ("entity", "Why is the ocean blue?"),
        ("question", "When is the sky blue?"),
        ("topic", "Why is the sky red at sunset?"),
    ]),
    ("Is it safe to eat raw eggs?", [
        ("negation", "Is it not safe to eat raw eggs?"),
        ("entity", "Is it safe to eat raw chicken?"),
        ("topic", "Is it safe to eat eggs every day?"),
        ("entity", "Is it safe for dogs to eat raw eggs?"),
    ]),
    ("How many days are there in a leap year?", [
        ("entity", "How many days are there in a week?"),
        ("topic", "How many hours are there in a leap year?"),
        ("negation", "How many days are there in a year that is not a leap year?"),
    ]),
    ("What's the difference between TCP and UDP?", [
        ("entity", "What's the difference between TCP and IP?"),
        ("entity", "What's the difference between HTTP and HTTPS?"),
        ("topic", "When should I use UDP?"),
    ]),
    ("How do I remove duplicates from a list in Python?", [
        ("polarity", "How do I add duplicates to a list in Python?"),
        ("entity", "How do I remove duplicates from a list in JavaScript?"),
        ("condition", "How do I remove duplicates from a list in Python and keep the order?"),
        ("topic", "How do I find duplicates in a list in Python?"),
    ]),
    ("Write a haiku about the ocean", [
        ("entity", "Write a haiku about the mountains"),
        ("entity", "Write a sonnet about the ocean"),
        ("number", "Write 3 haikus about the ocean"),
    ]),
    ("What are the symptoms of the flu?", [
        ("entity", "What are the symptoms of a cold?"),
        ("topic", "What are the treatments for the flu?"),
        ("entity", "What are the symptoms of the flu in children?"),
    ]),
    ("How do I enable two-factor authentication on GitHub?", [
        ("polarity", "How do I disable two-factor authentication on GitHub?"),
        ("entity", "How do I enable two-factor authentication on GitLab?"),
        ("topic", "How do I reset two-factor authentication on GitHub?"),
    ]),
    ("Should I buy a house or rent one?", [
        ("topic", "Should I buy a car or lease one?"),
        ("negation", "Should I never buy a house?"),
        ("topic", "Should I sell my house?"),
    ]),
    ("Translate 'good morning' into Spanish", [
        ("entity", "Translate 'good morning' into French"),
        ("entity", "Translate 'good night' into Spanish"),
        ("swap", "Translate 'buenos dias' from Spanish into English"),
    ]),
    ("What is the time complexity of quicksort?", [
        ("entity", "What is the time complexity of mergesort?"),
        ("topic", "What is the space complexity of quicksort?"),
        ("polarity", "What is the worst case time complexity of quicksort?"),
    ]),
    ("How long should I boil an egg for a soft yolk?", [
        ("topic", "How long should I boil an egg for a hard yolk?"),
        ("entity", "How long should I boil pasta?"),
        ("number", "How long should I boil 12 eggs for a soft yolk?"),
    ]),
    ("Who wrote Pride and Prejudice?", [
        ("entity", "Who wrote Sense and Sensibility?"),
        ("question", "When did Jane Austen write Pride and Prejudice?"),
        ("question", "Why was Pride and Prejudice written?"),
        ("topic", "When was Pride and Prejudice written?"),
        ("topic", "Who wrote the sequel to Pride and Prejudice?"),
    ]),
    ("Is coffee bad for your heart?", [
        ("polarity", "Is coffee good for your heart?"),
        ("entity", "Is coffee bad for your liver?"),
        ("question", "Why is coffee bad for your heart?"),
        ("question", "How is coffee bad for your heart?"),
        ("entity", "Is tea bad for your heart?"),
    ]),
    ("How do I lock my screen on a Mac?", [
        ("polarity", "How do I unlock my screen on a Mac?"),
        ("entity", "How do I lock my screen on Windows?"),
        ("topic", "How do I record my screen on a Mac?"),
    ]),
    ("What is the population of Tokyo in 2020?", [
        ("number", "What is the population of Tokyo in 2010?"),
        ("entity", "What is the population of Osaka in 2020?"),
        ("topic", "What is the area of Tokyo?"),
    ]),
    ("Can I take ibuprofen with alcohol?", [
        ("negation", "Can I take ibuprofen without alcohol?"),
        ("entity", "Can I take paracetamol with alcohol?"),
        ("negation", "Why can't I take ibuprofen with alcohol?"),
    ]),
    ("Is Python faster than Java?", [
        ("swap", "Is Java faster than Python?"),
        ("polarity", "Is Python slower than Java?"),
        ("entity", "Is Python faster than C?"),
    ]),
    ("How do I increase the font size in VS Code?", [
        ("polarity", "How do I decrease the font size in VS Code?"),
        ("entity", "How do I increase the font size in Vim?"),
        ("topic", "How do I change the font in VS Code?"),
    ]),
    ("What is the boiling point of water at sea level?", [
        ("entity", "What is the freezing point of water at sea level?"),
        ("topic", "What is the boiling point of water on Everest?"),
        ("entity", "What is the boiling point of ethanol at sea level?"),
    ]),
    ("Give me 5 ideas for a birthday party", [
        ("number", "Give me 10 ideas for a birthday party"),
        ("entity", "Give me 5 ideas for a wedding party"),
        ("topic", "Give me 5 gift ideas for a birthday"),
    ]),
    ("How do I undo the last commit in git?", [
        ("topic", "How do I undo the last merge in git?"),
        ("polarity", "How do I undo the first commit in git?"),
        ("condition", "How do I undo the last commit in git but keep the changes?"),
    ]),
    ("Summarize the plot of Hamlet", [
        ("entity", "Summarize the plot of Macbeth"),
        ("topic", "Summarize the themes of Hamlet"),
        ("number", "Summarize the plot of Hamlet in 3 sentences"),
    ]),
    ("What time zone is Chicago in?", [
        ("entity", "What time zone is Denver in?"),
        ("question", "Why is Chicago in the Central time zone?"),
        ("topic", "What is the time in Chicago?"),
    ]),
    ("How do I connect to a PostgreSQL database from Node.js?", [
        ("entity", "How do I connect to a MySQL database from Node.js?"),
        ("polarity", "How do I disconnect from a PostgreSQL database in Node.js?"),
        ("entity", "How do I connect to a PostgreSQL database from Python?"),
    ]),
    ("Does the moon have gravity?", [
        ("negation", "Why doesn't the moon have gravity?"),
        ("entity", "Does the moon have an atmosphere?"),
        ("question", "Why does the moon have gravity?"),
        ("entity", "Does Mars have gravity?"),
    ]),
    ("How far is the Earth from the Sun?", [
        ("entity", "How far is Mars from the Sun?"),
        ("question", "Why is the Earth this far from the Sun?"),
        ("entity", "How far is the Moon from the Earth?"),
        ("topic", "How old is the Sun?"),
    ]),
    ("What should I pack for a week in Iceland in winter?", [
        ("entity", "What should I pack for a week in Iceland in summer?"),
        ("entity", "What should I pack for a week in Spain in winter?"),
        ("number", "What should I pack for 2 weeks in Iceland in winter?"),
    ]),
    ("Explain recursion to a five year old", [
        ("number", "Explain recursion to a ten year old"),
        ("entity", "Explain inflation to a five year old"),
        ("topic", "Explain recursion with an example in Python"),
    ]),
    ("How do I sort a dictionary by value in Python?", [
        ("entity", "How do I sort a dictionary by key in Python?"),
        ("condition", "How do I sort a dictionary by value in descending order in Python?"),
        ("entity", "How do I sort a map by value in Java?"),
    ]),
    ("Is it better to run in the morning or the evening?", [
        ("topic", "Is it better to swim in the morning or the evening?"),
        ("topic", "Is it bad to run every day?"),
    ]),
    ("What is the exchange rate from euros to dollars?", [
        ("swap", "What is the exchange rate from dollars to euros?"),
        ("entity", "What is the exchange rate from euros to pounds?"),
    ]),
    ("How many calories are in a banana?", [
        ("entity", "How many calories are in an apple?"),
        ("topic", "How much potassium is in a banana?"),
        ("number", "How many calories are in 2 bananas?"),
    ]),
    ("Can dogs eat chocolate?", [
        ("entity", "Can cats eat chocolate?"),
        ("question", "When can dogs eat chocolate?"),
        ("entity", "Can dogs eat grapes?"),
        ("negation", "Why can't dogs eat chocolate?"),
    ]),
    ("How do I open a file in read mode in Python?", [
        ("entity", "How do I open a file in write mode in Python?"),
        ("polarity", "How do I close a file in Python?"),
        ("entity", "How do I open a file in read mode in C?"),
    ]),
    ("What year did World War 2 end?", [
        ("polarity", "What year did World War 2 start?"),
        ("number", "What year did World War 1 end?"),
        ("question", "Where did World War 2 end?"),
        ("question", "Why did World War 2 end?"),
    ]),
    ("Recommend a good book about habits", [
        ("entity", "Recommend a good book about productivity"),
        ("number", "Recommend 3 good books about habits"),
        ("entity", "Recommend a good podcast about habits"),
    ]),
    ("How do I move a file from my laptop to my phone?", [
        ("swap", "How do I move a file from my phone to my laptop?"),
        ("entity", "How do I move a file from my laptop to my tablet?"),
    ]),
    ("What is the speed of light in a vacuum?", [
        ("entity", "What is the speed of sound in a vacuum?"),
        ("entity", "What is the speed of light in water?"),
    ]),
    ("Is a tomato a fruit or a vegetable?", [
        ("entity", "Is a cucumber a fruit or a vegetable?"),
        ("entity", "Is a peanut a nut or a legume?"),
    ]),
    ("How do I allow cookies in Safari?", [
        ("polarity", "How do I block cookies in Safari?"),
        ("entity", "How do I allow cookies in Edge?"),
        ("topic", "How do I clear cookies in Safari?"),
    ]),
    ("What's the best way to learn Spanish quickly?", [
        ("entity", "What's the best way to learn German quickly?"),
        ("polarity", "What's the worst way to learn Spanish?"),
        ("topic", "What's the best way to teach Spanish?"),
    ]),
    ("Set an alarm for 7 am", [
        ("number", "Set an alarm for 8 am"),
        ("polarity", "Set an alarm for 7 pm"),
        ("topic", "Cancel the alarm for 7 am"),
    ]),
    ("Turn the kitchen lights on", [
        ("polarity", "Turn the kitchen lights off"),
        ("entity", "Turn the bedroom lights on"),
        ("polarity", "Turn the kitchen lights up"),
    ]),
    ("Is 91 a prime number?", [
        ("number", "Is 97 a prime number?"),
        ("negation", "Why is 91 not a prime number?"),
        ("topic", "Is 91 an even number?"),
    ]),
    ("Why did the Roman Empire fall?", [
        ("entity", "Why did the Ottoman Empire fall?"),
        ("question", "How did the Roman Empire fall?"),
        ("question", "Where did the Roman Empire fall?"),
        ("topic", "When did the Roman Empire fall?"),
        ("polarity", "Why did the Roman Empire rise?"),
    ]),
    ("How do I make pancakes without eggs?", [
        ("negation", "How do I make pancakes with eggs?"),
        ("negation", "How do I make pancakes without milk?"),
        ("entity", "How do I make waffles without eggs?"),
    ]),
    ("Which is larger, a kilobyte or a kibibyte?", [
        ("polarity", "Which is smaller, a kilobyte or a kibibyte?"),
        ("entity", "Which is larger, a megabyte or a mebibyte?"),
    ]),
    ("What does HTTP status 404 mean?", [
        ("number", "What does HTTP status 403 mean?"),
        ("number", "What does HTTP status 504 mean?"),
    ]),
    ("How do I check my Python version?", [
        ("entity", "How do I check my Java version?"),
        ("question", "Where do I check my Python version?"),
        ("topic", "How do I upgrade my Python version?"),
    ]),
    ("Is it legal to drive barefoot in California?", [
        ("entity", "Is it legal to drive barefoot in Texas?"),
        ("negation", "Why is it not legal to drive barefoot in California?"),
        ("topic", "Is it legal to drive with headphones in California?"),
    ]),
    ("Write a SQL query to count users by country", [
        ("entity", "Write a SQL query to count orders by country"),
        ("entity", "Write a SQL query to count users by city"),
        ("condition", "Write a SQL query to count users by country for the last 30 days"),
    ]),
    ("What causes the northern lights?", [
        ("polarity", "What causes the southern lights?"),
        ("topic", "Where can I see the northern lights?"),
    ]),
    ("What is the derivative of the integral of x squared?", [
        ("swap", "What is the integral of the derivative of x squared?"),
        ("number", "What is the second derivative of the integral of x squared?"),
    ]),
    ("How do I compute the average of the sums of each row?", [
        ("swap", "How do I compute the sum of the averages of each row?"),
        ("entity", "How do I compute the average of the sums of each column?"),
    ]),
    ("Is a kilogram of feathers heavier than a kilogram of steel?", [
        ("swap", "Is a kilogram of steel heavier than a kilogram of feathers?"),
        ("polarity", "Is a kilogram of feathers lighter than a kilogram of steel?"),
    ]),
    ("How do I stop my dog from barking at night?", [
        ("polarity", "How do I get my dog to start barking?"),
        ("entity", "How do I stop my cat from meowing at night?"),
        ("topic", "Why does my dog bark at night?"),
    ]),
]

POLITE_PREFIXES = ["Please tell me: ", "Could you tell me ", "Hey, ", "Quick question: ",
                   "I was wondering, ", "Can you explain ", "Hi! "]
POLITE_SUFFIXES = [" Thanks!", " please", " Thank you.", " Thx"]

CONTRACTIONS = [("What is", "What's"), ("What's", "What is"), ("do not", "don't"),
                ("How do I", "How can I"), ("How do I", "how to"), ("Is it", "is it"),
                ("can't", "cannot"), ("Should I", "should i")]


def lower_first(s):
    return s[0].lower() + s[1:] if s[:2] != "I " else s


def casing(q):
    return rng.choice([q.lower(), q.upper() if len(q) < 40 else q.lower(), q.rstrip("?!.")])


def punctuation(q):
    core = q.rstrip("?!.")
    return rng.choice([core + "??", core + " ?", core + "...", core.replace(",", "") + "?!"])


def polite(q):
    if rng.random() < 0.6:
        return rng.choice(POLITE_PREFIXES) + lower_first(q)
    return q + rng.choice(POLITE_SUFFIXES)


def contraction(q):
    for a, b in CONTRACTIONS:
        if a in q:
            return q.replace(a, b, 1)
    return None


def typo(q):
    words = q.split(" ")
    long_ones = [i for i, w in enumerate(words) if len(w.strip("?.,!'")) >= 6]
    if not long_ones:
        return None
    i = rng.choice(long_ones)
    w = words[i]
    j = rng.randrange(1, len(w.strip("?.,!'")) - 2)
    words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
    return " ".join(words)


def spacing(q):
    return "  ".join(q.split(" ")) if rng.random() < 0.5 else "  " + q + "   "


# Reorderings written by hand (the same question, a clause moved or reworded).
REORDERED = [
    ("How do I reverse a list in Python?", "In Python, how do I reverse a list?"),
    ("How do I reverse a list in Python?", "Python: how to reverse a list"),
    ("Find flights from New York to Los Angeles", "Find flights to Los Angeles from New York"),
    ("How do I turn on dark mode in Chrome?", "In Chrome, how do I turn dark mode on?"),
    ("Convert 100 Celsius to Fahrenheit", "100 Celsius to Fahrenheit, please convert"),
    ("What is the capital of France?", "France: what is its capital?"),
    ("Is it safe to eat raw eggs?", "Raw eggs: is it safe to eat them?"),
    ("How do I sort a dictionary by value in Python?", "In Python, how can I sort a dictionary by value?"),
    ("Can I take ibuprofen with alcohol?", "Is it ok to take ibuprofen with alcohol?"),
    ("Set an alarm for 7 am", "Please set an alarm for 7 am"),
    ("Turn the kitchen lights on", "Turn on the kitchen lights"),
    ("What year did World War 2 end?", "What year did World War II end?"),
    ("What year did World War 2 end?", "In what year did World War Two end?"),
    ("How many calories are in a banana?", "How many calories does a banana have?"),
    ("Can dogs eat chocolate?", "Is chocolate safe for dogs to eat?"),
    ("Who wrote Pride and Prejudice?", "Pride and Prejudice was written by whom?"),
    ("How do I undo the last commit in git?", "git: how to undo the last commit"),
    ("Is 91 a prime number?", "Is the number 91 prime?"),
    ("What does HTTP status 404 mean?", "What is the meaning of HTTP status 404?"),
    ("How do I check my Python version?", "How can I check which Python version I have?"),
    ("Give me 5 ideas for a birthday party", "Birthday party: give me 5 ideas"),
    ("Explain recursion to a five year old", "Explain recursion to a 5 year old"),
    ("How do I make pancakes without eggs?", "How can I make pancakes with no eggs?"),
    ("Why is the sky blue?", "What makes the sky blue?"),
    ("What is the time complexity of quicksort?", "Quicksort: what's its time complexity?"),
    ("How do I lock my screen on a Mac?", "On a Mac, how do I lock the screen?"),
    ("What's the difference between TCP and UDP?", "TCP vs UDP: what's the difference?"),
    ("What's the difference between TCP and UDP?", "What is the difference between UDP and TCP?"),
    ("Is Python faster than Java?", "Is Java slower than Python?"),
    ("How far is the Earth from the Sun?", "What is the distance from the Earth to the Sun?"),
]


def main():
    rows = []
    for question, negatives in BASES:
        variants = [("casing", casing(question)), ("punctuation", punctuation(question)),
                    ("polite", polite(question)), ("spacing", spacing(question)),
                    ("contraction", contraction(question)), ("typo", typo(question))]
        for kind, v in variants:
            if v and v != question:
                rows.append((question, v, "yes", kind))
        for kind, v in negatives:
            rows.append((question, v, "no", kind))
            # The same negative asked politely: the guard must not be fooled by filler.
            if rng.random() < 0.35:
                rows.append((question, polite(v), "no", kind + "+polite"))
    for cached, query in REORDERED:
        rows.append((cached, query, "yes", "rephrase"))
    print("# cached\tquery\texpected\tkind  (written by bench/cache/make_paraphrases.py)")
    for r in rows:
        assert all("\t" not in f and "\n" not in f for f in r), r
        print("\t".join(r))


if __name__ == "__main__":
    main()
