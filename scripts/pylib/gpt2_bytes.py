"""GPT-2's byte <-> unicode map, the one Python copy (data/tokenizer/bpe.py and the tokenizer tests
import it; engine/text/tokenizer.c has the C one).

Byte-level BPE works on printable characters, so every byte gets a stand-in: the printable
Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves, the other 68 are mapped to
U+0100 upward in byte order.
"""


def bytes_to_unicode():
    """-> [(byte, char)] in GPT-2's order, which is also the order of the first 256 token ids:
    the printable bytes first, then the remaining ones. dict() of it is GPT-2's byte_encoder."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [(b, chr(c)) for b, c in zip(bs, cs)]
