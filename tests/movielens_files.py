"""A tiny MovieLens-like data set, written in both file formats by the tests."""

USERS = [(1, 24, "M", "technician", "85711"), (2, 53, "F", "other", "94043"), (3, 17, "M", "student", "T8H1N")]
MOVIES = [
    (1, "Toy Story (1995)", "01-Jan-1995", ["Animation", "Children's", "Comedy"]),
    (2, "GoldenEye (1995)", "01-Jan-1995", ["Action", "Adventure", "Thriller"]),
    (3, "Four Rooms (1995)", "01-Jan-1995", ["Thriller"]),
    (4, "Unknown Film", "", ["unknown"]),
]
RATINGS = [
    (1, 1, 5, 874965758),
    (1, 2, 3, 876893171),
    (2, 1, 4, 878542960),
    (2, 3, 1, 876893119),
    (3, 4, 2, 889751712),
    (3, 2, 4, 875071561),
]


def write_grouplens_100k(d):
    from fmlib.data.movielens import GENRES_100K

    d.mkdir(parents=True, exist_ok=True)
    (d / "u.data").write_text("".join(f"{u}\t{m}\t{r}\t{t}\n" for u, m, r, t in RATINGS))
    (d / "u.user").write_text("".join(f"{u}|{a}|{g}|{o}|{z}\n" for u, a, g, o, z in USERS))
    rows = []
    for m, title, date, genres in MOVIES:
        flags = "|".join("1" if g in genres else "0" for g in GENRES_100K)
        rows.append(f"{m}|{title}|{date}||http://example.org|{flags}\n")
    (d / "u.item").write_bytes("".join(rows).encode("latin-1"))
    return d


def write_recbole_atomic(d):
    d.mkdir(parents=True, exist_ok=True)
    (d / "ml-100k.inter").write_text(
        "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
        + "".join(f"{u}\t{m}\t{r}\t{t}\n" for u, m, r, t in RATINGS)
    )
    (d / "ml-100k.user").write_text(
        "user_id:token\tage:token\tgender:token\toccupation:token\tzip_code:token\n"
        + "".join(f"{u}\t{a}\t{g}\t{o}\t{z}\n" for u, a, g, o, z in USERS)
    )
    items = []
    for m, title, date, genres in MOVIES:
        year = date[-4:] if date else "unkonwn"  # RecBole's spelling of a missing year
        items.append(f"{m}\t{title.rsplit(' (', 1)[0]}\t{year}\t{' '.join(genres)}\n")
    (d / "ml-100k.item").write_text(
        "item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq\n" + "".join(items)
    )
    return d
