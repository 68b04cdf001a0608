"""Writes repl-heldout.toml: questions for `agentloop-bench repl --set heldout`,
each answer computed here when the set was written. The set is never tuned
on: run this only to regenerate the same file.

    python3 crates/bench/data/repl-heldout.py > crates/bench/data/repl-heldout.toml
"""
import datetime as dt
import math
import random
import itertools
from collections import Counter

Q = []


def q(prompt, answer):
    Q.append((prompt, str(answer)))


def primes_below(n):
    sieve = [True] * n
    sieve[0:2] = [False, False]
    for i in range(2, int(n ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i::i] = [False] * len(sieve[i * i::i])
    return [i for i, p in enumerate(sieve) if p]


def is_prime(n):
    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))


# Dates
q("What day of the week was 1969-07-20? Answer with the day's English name.", dt.date(1969, 7, 20).strftime("%A"))
q("How many days are there between 2023-03-15 and 2025-08-01?", (dt.date(2025, 8, 1) - dt.date(2023, 3, 15)).days)
q("What date is 1000 days after 2020-02-29? Answer as YYYY-MM-DD.", (dt.date(2020, 2, 29) + dt.timedelta(days=1000)).isoformat())
q("How many leap years are there from 1900 to 2100 inclusive?", sum(1 for y in range(1900, 2101) if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0))
q("How many Fridays fall on the 13th of a month in the years 2000 to 2030 inclusive?", sum(1 for y in range(2000, 2031) for m in range(1, 13) if dt.date(y, m, 13).weekday() == 4))
q("What is the day of the year (1 for January 1st) of 2031-10-09?", dt.date(2031, 10, 9).timetuple().tm_yday)
q("How many Mondays are there in the year 2027?", sum(1 for d in range(365) if (dt.date(2027, 1, 1) + dt.timedelta(days=d)).weekday() == 0))
q("How many seconds are there in the 17 days, 5 hours and 3 minutes together?", 17 * 86400 + 5 * 3600 + 3 * 60)
q("On what date does the 256th day of 2026 fall? Answer as YYYY-MM-DD.", (dt.date(2026, 1, 1) + dt.timedelta(days=255)).isoformat())
q("How many full weeks are there between 2001-09-09 and 2019-01-01?", (dt.date(2019, 1, 1) - dt.date(2001, 9, 9)).days // 7)
q("In which month (English name) does the 200th day of 2028 fall?", (dt.date(2028, 1, 1) + dt.timedelta(days=199)).strftime("%B"))
q("How many months from January 2010 to December 2030 inclusive have 31 days?", sum(1 for y in range(2010, 2031) for m in range(1, 13) if (dt.date(y + (m == 12), m % 12 + 1, 1) - dt.date(y, m, 1)).days == 31))

# Counting
s1 = "mississippi river banks are wide and sandy"
q(f"How many times does the letter 's' occur in '{s1}'?", s1.count("s"))
s2 = "she sells sea shells by the sea shore"
q(f"How many words in '{s2}' start with the letter 's'?", sum(1 for w in s2.split() if w.startswith("s")))
q("How many integers from 1 to 5000 contain the digit 7 at least once?", sum(1 for n in range(1, 5001) if "7" in str(n)))
q("How many times is the digit 1 written when you write all integers from 1 to 999?", sum(str(n).count("1") for n in range(1, 1000)))
q("How many ways can you choose 4 items from 15 distinct items, order not mattering?", math.comb(15, 4))
q("How many distinct arrangements are there of the letters of the word BANANA?", math.factorial(6) // (math.factorial(3) * math.factorial(2)))
q("How many subsets of {1, 2, ..., 12} have a sum that is divisible by 4?", sum(1 for r in range(13) for c in itertools.combinations(range(1, 13), r) if sum(c) % 4 == 0))
q("How many lattice points (x, y) with integer x and y satisfy x*x + y*y <= 100?", sum(1 for x in range(-10, 11) for y in range(-10, 11) if x * x + y * y <= 100))
q("How many integers from 1 to 10000 are perfect squares or perfect cubes?", len({i * i for i in range(1, 101)} | {i ** 3 for i in range(1, 22) if i ** 3 <= 10000}))
s3 = "to be or not to be that is the question whether tis nobler in the mind to suffer"
q(f"Which word occurs most often in '{s3}'?", Counter(s3.split()).most_common(1)[0][0])
q("How many three-digit numbers have digits that sum to 15?", sum(1 for n in range(100, 1000) if sum(map(int, str(n))) == 15))
q("How many binary strings of length 12 contain no two consecutive 1s?", sum(1 for b in itertools.product("01", repeat=12) if "11" not in "".join(b)))
q("How many of the integers from 1 to 2000 have an odd number of divisors?", sum(1 for n in range(1, 2001) if sum(1 for d in range(1, n + 1) if n % d == 0) % 2 == 1))
s4 = "A man a plan a canal Panama"
q(f"How many letters (ignoring spaces) does '{s4}' have?", sum(c.isalpha() for c in s4))

# Number theory
q("What is the least common multiple of 84, 90 and 126?", math.lcm(84, 90, 126))
q("What is the sum of all primes below 2000?", sum(primes_below(2000)))
q("What is the 500th prime number?", primes_below(10000)[499])
q("What is the sum of the proper divisors of 2024 (all divisors except 2024 itself)?", sum(d for d in range(1, 2024) if 2024 % d == 0))
q("What is Euler's totient of 3600?", sum(1 for k in range(1, 3601) if math.gcd(k, 3600) == 1))
q("What is 7 to the power 222, modulo 1000?", pow(7, 222, 1000))
def largest_prime_factor(n):
    d, last = 2, 1
    while d * d <= n:
        while n % d == 0:
            last, n = d, n // d
        d += 1
    return max(last, n) if n > 1 else last


q("What is the largest prime factor of 600851?", largest_prime_factor(600851))
q("How many divisors does 720720 have?", sum(1 for d in range(1, 720721) if 720720 % d == 0))
q("What is the smallest positive integer that leaves remainder 2 when divided by 3, 3 when divided by 5, and 2 when divided by 7?", next(n for n in range(1, 1000) if n % 3 == 2 and n % 5 == 3 and n % 7 == 2))
q("How many steps does the Collatz sequence starting at 97 take to reach 1 (halve if even, 3n+1 if odd)?", (lambda n: (lambda f: f(f, n, 0))(lambda f, n, k: k if n == 1 else f(f, n // 2 if n % 2 == 0 else 3 * n + 1, k + 1)))(97))
q("How many trailing zeros does 100 factorial have?", len(str(math.factorial(100))) - len(str(math.factorial(100)).rstrip("0")))
q("How many twin prime pairs (p, p + 2, both prime) are there with p + 2 below 1000?", sum(1 for p in primes_below(1000) if p + 2 < 1000 and is_prime(p + 2)))
q("What is the 40th triangular number?", 40 * 41 // 2)
q("What is the greatest common divisor of 123456 and 7890?", math.gcd(123456, 7890))
q("What is the smallest number greater than 1000 that is a palindrome and prime?", next(n for n in range(1001, 100000) if str(n) == str(n)[::-1] and is_prime(n)))
q("How many numbers below 10000 are equal to the sum of the cubes of their digits? Count 1 but not 0.", sum(1 for n in range(1, 10000) if n == sum(int(c) ** 3 for c in str(n))))
q("What is the last digit of 3 to the power 2027?", pow(3, 2027, 10))
q("What is 13 factorial divided by 10 factorial?", math.factorial(13) // math.factorial(10))


def even_fib_sum(limit):
    a, b, total = 1, 2, 0
    while a <= limit:
        if a % 2 == 0:
            total += a
        a, b = b, a + b
    return total


q("What is the sum of the even Fibonacci numbers not exceeding 4000000, if the sequence starts 1, 2, 3, 5?", even_fib_sum(4000000))

# Strings
w1 = "reflection"
q(f"What is '{w1}' with its letters in alphabetical order?", "".join(sorted(w1)))
w2 = "attack at dawn"
q(f"Apply a Caesar shift of 3 to '{w2}' (letters only, spaces kept). What is the result?", "".join(chr((ord(c) - 97 + 3) % 26 + 97) if c.isalpha() else c for c in w2))
q("What is the longest word in 'observation precedes every careful conclusion drawn'?", max("observation precedes every careful conclusion drawn".split(), key=len))
q("How many distinct characters (ignoring spaces) are in 'the loop runs until the goal is met'?", len(set("the loop runs until the goal is met".replace(" ", ""))))
q("What is the string 'Rust and Python' in upper case with its spaces replaced by underscores?", "Rust and Python".upper().replace(" ", "_"))
q("What is the run-length encoding of 'aaabccddddde', written as letter then count for each run (e.g. a3)?", "".join(f"{k}{len(list(g))}" for k, g in itertools.groupby("aaabccddddde")))
q("How many palindromic substrings (counting each position separately, single letters included) does 'abaaba' have?", sum(1 for i in range(6) for j in range(i + 1, 7) if "abaaba"[i:j] == "abaaba"[i:j][::-1]))
q("What is the first letter that appears exactly once in 'swiss cheese mousse'? Ignore spaces.", next(c for c in "swiss cheese mousse" if c != " " and "swiss cheese mousse".count(c) == 1))
q("Write the words of 'plan act observe reflect' each reversed, joined by single spaces. What is the result?", " ".join(w[::-1] for w in "plan act observe reflect".split()))
q("What is the hexadecimal representation of 48879, in lower case and without a 0x prefix?", format(48879, "x"))
q("What is the sum of the alphabet positions (a=1, b=2, ..., z=26) of the letters in 'agentloop'?", sum(ord(c) - 96 for c in "agentloop"))
q("What is the Roman numeral for 1994?", "MCMXCIV")
q("How many consonants are in 'Observation beats assumption every single time'? Count letters other than a, e, i, o, u.", sum(c.isalpha() and c not in "aeiou" for c in "Observation beats assumption every single time".lower()))
q("What is the Levenshtein edit distance between 'kitten' and 'sitting'?", 3)
q("Take the word 'loop', repeat it 5 times joined by '-', and count the letter 'o' in the result. What is the count?", "-".join(["loop"] * 5).count("o"))
q("What is the decimal value of the binary number 101101110?", int("101101110", 2))

# Small simulations
q("A bank account starts at 2500 and gains 3% interest at the end of each year, after which 100 is withdrawn. What is the balance after 8 years, to 2 decimals?", f"{(lambda b: [b := b * 1.03 - 100 for _ in range(8)][-1])(2500):.2f}")
q("A population of 1000 bacteria grows by 12% each hour. After how many whole hours does it first exceed 10000?", next(h for h in range(1, 100) if 1000 * 1.12 ** h > 10000))
q("A frog starts at 0 and jumps +5, -3, +5, -3, ... alternately. After how many jumps does it first reach position 20 or more?", (lambda: next(k for k in range(1, 100) if sum(5 if i % 2 == 0 else -3 for i in range(k)) >= 20))())
q("Starting with the list [1], repeat 10 times: append the sum of the list so far. What is the last element?", (lambda l: [l.append(sum(l)) for _ in range(10)] and l[-1])([1]))
q("A queue gets 3 new people every minute and serves 2 people per minute, starting empty with arrivals before service each minute. How many people are waiting after 45 minutes?", 45 * 3 - 45 * 2)
q("With random.seed(7), shuffle the list of integers 1 to 10 with random.shuffle. What is the first element?", (lambda r: (r.seed(7), (lambda l: (r.shuffle(l), l[0])[1])(list(range(1, 11))))[1])(random.Random()))
q("With random.seed(2026), draw 500 values with random.random(). How many are greater than 0.75?", (lambda r: (r.seed(2026), sum(1 for _ in range(500) if r.random() > 0.75))[1])(random.Random()))
q("A car travels at 60 km/h for 2.5 hours, then at 90 km/h for 1.2 hours. What is its average speed in km/h over the whole trip, to 2 decimals?", f"{(60 * 2.5 + 90 * 1.2) / 3.7:.2f}")
q("A tank holds 500 litres and loses 4% of what it holds every day. How many litres remain after 30 days, to 2 decimals?", f"{500 * 0.96 ** 30:.2f}")
q("Start at x = 1. Repeat 25 times: x = (x * 17 + 5) % 101. What is x at the end?", (lambda x: [x := (x * 17 + 5) % 101 for _ in range(25)][-1])(1))
q("In a game of Conway's Life on an unbounded grid, a glider has 5 live cells. How many live cells does it have after 40 generations?", 5)
q("A ladder of 100 rungs: you climb 3 rungs and slip back 1 each turn. After how many turns do you first stand on rung 100 or higher?", next(t for t in range(1, 1000) if 3 * t - (t - 1) >= 100))
q("Ten people stand in a circle numbered 1 to 10; counting from person 1, every 3rd person leaves until one remains. What is the number of the last person?", (lambda n, k: (lambda f: f(f, n) + 1)(lambda f, m: 0 if m == 1 else (f(f, m - 1) + k) % m))(10, 3))
q("A loan of 10000 has 1% interest added at the end of each month, after which 500 is paid. After how many months is it first paid off (balance at or below zero)?", (lambda b: next(m for m in range(1, 1000) if (b := b * 1.01 - 500) <= 0))(10000))
q("A snail climbs 7 metres up a 30-metre well each day and slides back 2 metres each night. On which day does it reach the top?", next(d for d in range(1, 100) if 5 * (d - 1) + 7 >= 30))
q("Roll two fair dice in every one of their 36 combinations. In how many of them is the sum a prime number?", sum(1 for a in range(1, 7) for b in range(1, 7) if is_prime(a + b)))
q("Flip a fair coin 10 times in every possible way. In how many of the 1024 sequences are there exactly 4 heads?", math.comb(10, 4))
q("Three workers build a wall alone in 6, 8 and 12 hours. Working together, how many hours do they take? Give it to 2 decimals.", f"{1 / (1 / 6 + 1 / 8 + 1 / 12):.2f}")
q("A savings plan puts in 200 at the start of each month and earns 0.5% interest at the end of each month. What is it worth after 24 months, to 2 decimals?", f"{(lambda b: [b := (b + 200) * 1.005 for _ in range(24)][-1])(0):.2f}")

assert len(Q) >= 80, len(Q)
assert len({p for p, _ in Q}) == len(Q), "each question once"


def toml_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


print("# Held-out questions for `agentloop-bench repl --set heldout`, written by")
print("# repl-heldout.py (answers computed there) before any tuning on them.")
print("# Never tune on these: report them beside the tuning set.")
for prompt, answer in Q:
    print()
    print("[[question]]")
    print(f"prompt = {toml_string(prompt)}")
    print(f"answer = {toml_string(answer)}")
