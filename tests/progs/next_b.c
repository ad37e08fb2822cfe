/* next_b.c - second definition of ga_next_probe, found through RTLD_NEXT. */
int ga_next_probe(void);
int ga_next_probe(void)
{
    return 2;
}
