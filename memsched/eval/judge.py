"""The LLM-as-judge metric (J) that mem0 and Zep report: answer from the context, then grade it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from memsched.errors import LLMError
from memsched.llm.client import ChatClient, complete_json
from memsched.llm.prompts import load


class Verdict(BaseModel):
    reasoning: str = ""
    label: Literal["CORRECT", "WRONG"]


class Judge:
    """Callable(question, messages) -> 1.0 or 0.0; a failed call counts as WRONG and is tallied."""

    def __init__(self, answerer: ChatClient, grader: ChatClient) -> None:
        self.answerer = answerer
        self.grader = grader
        self.errors = 0

    def __call__(self, question: Any, messages: list[dict[str, Any]]) -> float:
        try:
            prompt = load("answer").format(question=question.text)
            asked = [*messages[:-1], {"role": "user", "content": prompt}]
            answer = self.answerer.complete(asked, purpose="judge", temperature=0.0).content.strip()
            grading = load("judge").format(question=question.text, gold=question.answer, answer=answer)
            verdict = complete_json(
                self.grader, [{"role": "user", "content": grading}], Verdict, purpose="judge"
            )
        except LLMError:
            self.errors += 1
            return 0.0
        return 1.0 if verdict.label == "CORRECT" else 0.0
